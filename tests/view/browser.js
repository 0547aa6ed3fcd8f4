#!/usr/bin/env node
/* Opens an mbopt HTML page (mbopt view, report.html) in headless Chromium (Debian's
   /usr/bin/chromium) through the DevTools protocol on a pipe, with no other dependency, and
   checks it as a person would see it:
     - no script error: uncaught exceptions, console errors and the page's own error list;
     - the 3-D canvas is drawn: enough of its pixels differ from the background;
     - the time cursor moves the mechanism: the time slider, moved as a user moves it, changes the
       canvas's pixels;
     - one plot panel per output of the page's designs;
     - with --report, the convergence plot's "best" curves hold only feasible evaluations, each
       the lowest feasible objective so far.
   Usage: node tests/view/browser.js [--report [--expect-infeasible]] [--still] [--expect-noise COLUMN] [--screenshot FILE.png [--full-page]] [--at FRACTION]
          PAGE.html
   (--at: the time of the screenshot as a fraction of the span; --full-page: the whole page, not
   only the window; --still: a mechanism at rest, whose canvas need not change with the time;
   --expect-noise: a column that must be drawn as noise, its mean and range noted)
   Prints one line per page and exits 1 when a check fails. */
'use strict';
const { spawn } = require('child_process');
const fs = require('fs');
const os = require('os');
const path = require('path');

const args = process.argv.slice(2);
const option = (name) => {
  const i = args.indexOf(name);
  if (i < 0) return null;
  const value = args[i + 1];
  args.splice(i, 2);
  return value;
};
const flag = (name) => {
  const i = args.indexOf(name);
  if (i >= 0) args.splice(i, 1);
  return i >= 0;
};
const screenshot = option('--screenshot');
const at = Number(option('--at') || '0.5');
const report = flag('--report');
const fullPage = flag('--full-page');
const expectInfeasible = flag('--expect-infeasible');
const still = flag('--still');
const noiseColumn = option('--expect-noise');
const chromium = process.env.CHROMIUM || '/usr/bin/chromium';
if (args.length !== 1) {
  console.error('usage: browser.js [--report] [--screenshot FILE.png] [--at FRACTION] PAGE.html');
  process.exit(2);
}
const page = path.resolve(args[0]);
if (!fs.existsSync(page)) {
  console.error(`browser.js: ${page}: no such file`);
  process.exit(2);
}
if (!fs.existsSync(chromium)) {
  console.error(`browser.js: ${chromium} is missing (scripts/install-deps.sh installs Debian's chromium)`);
  process.exit(2);
}

// Chromium with the protocol on file descriptors 3 (its input) and 4 (its output)
const profile = fs.mkdtempSync(path.join(os.tmpdir(), 'mbopt-browser-'));
const browser = spawn(chromium, [
  '--headless', '--no-sandbox', '--remote-debugging-pipe', `--user-data-dir=${profile}`,
  '--use-angle=swiftshader', '--enable-unsafe-swiftshader', '--window-size=1400,1000',
  '--hide-scrollbars', '--mute-audio', '--no-first-run', '--no-default-browser-check',
  '--disable-extensions', '--disable-background-networking', 'about:blank',
], { stdio: ['ignore', 'ignore', 'pipe', 'pipe', 'pipe'] });
let browserLog = '';
browser.stderr.on('data', (chunk) => (browserLog = (browserLog + chunk).slice(-4000)));
const toBrowser = browser.stdio[3], fromBrowser = browser.stdio[4];

let nextId = 1;
const pending = new Map();
const listeners = [];
let buffer = '';
fromBrowser.on('data', (chunk) => {
  buffer += chunk.toString('utf8');
  let end;
  while ((end = buffer.indexOf('\0')) >= 0) {
    const message = JSON.parse(buffer.slice(0, end));
    buffer = buffer.slice(end + 1);
    if (message.id && pending.has(message.id)) {
      const { resolve, reject } = pending.get(message.id);
      pending.delete(message.id);
      if (message.error) reject(new Error(JSON.stringify(message.error)));
      else resolve(message.result);
    } else if (message.method) {
      for (const l of listeners) l(message);
    }
  }
});

function send(method, params, sessionId) {
  const id = nextId++;
  const message = { id, method, params: params || {} };
  if (sessionId) message.sessionId = sessionId;
  toBrowser.write(JSON.stringify(message) + '\0');
  return new Promise((resolve, reject) => pending.set(id, { resolve, reject }));
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
let exited = false;
browser.on('exit', () => (exited = true));
// the browser asked to close, then killed if it lingers; its profile removed
async function shutdown() {
  if (!exited) {
    await Promise.race([send('Browser.close').catch(() => {}), sleep(3000)]);
    for (let i = 0; i < 50 && !exited; i++) await sleep(100);
  }
  if (!exited) browser.kill('SIGKILL');
  for (let i = 0; i < 20 && !exited; i++) await sleep(100);
  try {
    fs.rmSync(profile, { recursive: true, force: true, maxRetries: 10, retryDelay: 100 });
  } catch (e) {
    /* a temporary folder left behind is no failure of the page */
  }
}
process.on('exit', () => {
  if (!exited) browser.kill('SIGKILL');
});
const watchdog = setTimeout(() => {
  console.log(`FAIL ${page}: timed out after 150 s\n${browserLog}`);
  process.exit(1);
}, 150000);

async function main() {
  const errors = [];
  const { targetId } = await send('Target.createTarget', { url: 'about:blank' });
  const { sessionId } = await send('Target.attachToTarget', { targetId, flatten: true });
  const call = (method, params) => send(method, params, sessionId);
  listeners.push((m) => {
    if (m.sessionId !== sessionId) return;
    if (m.method === 'Runtime.exceptionThrown') {
      const d = m.params.exceptionDetails;
      errors.push('exception: ' + ((d.exception && d.exception.description) || d.text));
    } else if (m.method === 'Runtime.consoleAPICalled' && m.params.type === 'error') {
      errors.push('console.error: ' + m.params.args.map((a) => a.value || a.description).join(' '));
    } else if (m.method === 'Log.entryAdded' && m.params.entry.level === 'error') {
      errors.push('log: ' + m.params.entry.text + (m.params.entry.url ? ' (' + m.params.entry.url + ')' : ''));
    }
  });
  await call('Runtime.enable');
  await call('Log.enable');
  await call('Page.enable');
  await call('Emulation.setDeviceMetricsOverride', { width: 1400, height: 1000, deviceScaleFactor: 1, mobile: false });
  const evaluate = async (expression) => {
    const r = await call('Runtime.evaluate', { expression, returnByValue: true, awaitPromise: true });
    if (r.exceptionDetails) throw new Error('evaluating ' + expression + ': ' + JSON.stringify(r.exceptionDetails));
    return r.result.value;
  };
  const started = Date.now();
  await call('Page.navigate', { url: 'file://' + page + '?paused' });
  // ready, or an error
  let ready = false;
  while (Date.now() - started < 90000) {
    ready = await evaluate('!!(window.mbopt && window.mbopt.ready)').catch(() => false);
    const own = await evaluate('window.mbopt ? window.mbopt.errors : []').catch(() => []);
    for (const e of own || []) if (!errors.includes('page: ' + e)) errors.push('page: ' + e);
    if (ready || errors.length) break;
    await sleep(100);
  }
  const loadSeconds = (Date.now() - started) / 1000;
  const failures = [];
  if (!ready && !errors.length) failures.push('the page never became ready');
  const facts = [];
  if (ready) {
    const info = await evaluate(`(() => {
      const d = window.mbopt.data;
      const designs = d.designs || [];
      return { panels: document.querySelectorAll('#plots .panel').length,
               outputs: designs.length ? designs[0].outputs.length : 0,
               designs: designs.length, span: window.mbopt.span || null,
               bytes: document.documentElement.outerHTML.length };
    })()`);
    if (info.designs) {
      if (info.panels !== info.outputs) failures.push(`${info.panels} plot panels for ${info.outputs} outputs`);
      // the canvas at the start, then with the time slider moved as a user moves it
      await evaluate('window.mbopt.setTime(window.mbopt.span[0])');
      await sleep(50);
      const first = await evaluate('window.mbopt.snapshot()');
      const moves = [];
      for (const value of [500, 1000, 250]) {
        await evaluate(`(() => { const s = document.getElementById('time'); s.value = '${value}';
          s.dispatchEvent(new Event('input', { bubbles: true })); })()`);
        await sleep(50);
        moves.push(await evaluate('window.mbopt.snapshot()'));
      }
      const clock = await evaluate("document.getElementById('clock').textContent");
      if (noiseColumn) {
        const noise = await evaluate('window.mbopt.noise');
        const n = noise.find((x) => x.column === noiseColumn);
        if (!n) failures.push(`column ${noiseColumn} is not shown as noise (noise: ${noise.map((x) => x.column).join(', ') || 'none'})`);
        else facts.push(`${noiseColumn} shown as noise (range ${n.range.toExponential(2)}, ${(n.range / n.reference).toExponential(1)} of its unit's scale)`);
      }
      if (first.fraction < 0.01)
        failures.push(`the 3-D canvas is blank (${(100 * first.fraction).toFixed(2)}% of its pixels drawn)`);
      const moved = moves.filter((s) => s.hash !== first.hash).length;
      if (!moved && !still) failures.push('moving the time slider did not change the 3-D canvas');
      facts.push(`canvas ${first.width}x${first.height}, ${(100 * first.fraction).toFixed(1)}% drawn`,
        `${moved} of 3 slider positions moved the mechanism (${clock})`,
        `${info.panels} plot panels`, `${info.designs} design${info.designs > 1 ? 's' : ''}`);
    }
    if (report) {
      const r = await evaluate('window.mbopt.reportCheck ? window.mbopt.reportCheck() : null');
      if (!r) failures.push('the page has no report');
      else {
        for (const f of r.failures) failures.push(f);
        if (expectInfeasible && !r.lowerInfeasible)
          failures.push('no infeasible evaluation below the best feasible objective: the check shows nothing');
        facts.push(`report: ${r.runs} runs, ${r.bestPoints} best points, all feasible and monotone` +
          (r.lowerInfeasible ? `, ${r.lowerInfeasible} lower infeasible points left out` : ''));
      }
    }
    if (screenshot) {
      await evaluate(`window.mbopt.setTime && window.mbopt.setTime(window.mbopt.span[0] + ${at} * (window.mbopt.span[1] - window.mbopt.span[0]))`);
      await sleep(100);
      const height = fullPage ? await evaluate('document.documentElement.scrollHeight') : 1000;
      const shot = await call('Page.captureScreenshot', { format: 'png', captureBeyondViewport: fullPage,
        clip: { x: 0, y: 0, width: 1400, height, scale: 1 } });
      fs.writeFileSync(screenshot, Buffer.from(shot.data, 'base64'));
      facts.push('screenshot ' + screenshot);
    }
  }
  for (const e of errors) failures.push(e);
  const name = path.basename(page);
  if (failures.length) {
    console.log(`FAIL ${name}: ${failures.join('; ')}`);
    return 1;
  }
  console.log(`ok ${name}: ready in ${loadSeconds.toFixed(1)} s; ${facts.join('; ')}`);
  return 0;
}

main()
  .catch((e) => {
    console.log(`FAIL ${path.basename(page)}: ${e.message}\n${browserLog}`);
    return 1;
  })
  .then(async (code) => {
    await shutdown();
    clearTimeout(watchdog);
    process.exit(code);
  });
