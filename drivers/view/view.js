/* mbopt's HTML pages (mbopt view, report.html): the mechanism in 3-D from the recorded body
   frames, play/pause/scrub/speed, an orbiting camera, the outputs plotted with uPlot and
   synchronised with the time cursor, and for a report its tables and convergence plots.
   The page's data is the JSON of #mbopt-data (drivers/view_scene.c writes a design's part,
   drivers/report.c a report's); three.js and uPlot are inlined by the program. For the browser
   tests, window.mbopt exposes ready, errors, setTime and snapshot. */
(function () {
  'use strict';

  const api = (window.mbopt = { ready: false, errors: [] });

  // ------------------------------------------------------------------------------------------
  // errors: shown on the page and kept for the tests

  function fail(error) {
    const text = error && error.stack ? error.stack : String(error);
    api.errors.push(text);
    const box = document.getElementById('error');
    box.hidden = false;
    box.textContent += (box.textContent ? '\n' : '') + text;
    console.error(text);
  }
  window.addEventListener('error', (e) => fail(e.error || e.message));
  window.addEventListener('unhandledrejection', (e) => fail(e.reason));

  // ------------------------------------------------------------------------------------------
  // small helpers

  const $ = (id) => document.getElementById(id);

  function element(tag, attributes, parent, text) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attributes || {})) e.setAttribute(k, v);
    if (text !== undefined) e.textContent = text;
    if (parent) parent.appendChild(e);
    return e;
  }

  // a number as people read it: 4 significant digits, exponent only when needed
  function fmt(v, digits) {
    if (v === null || v === undefined || !isFinite(v)) return 'n/a';
    const d = digits || 4;
    const a = Math.abs(v);
    if (a !== 0 && (a < 1e-3 || a >= 1e6)) return v.toExponential(d - 1);
    return String(Number(v.toPrecision(d)));
  }

  const palette = ['#1f77b4', '#d62728', '#2ca02c', '#9467bd', '#ff7f0e', '#17becf', '#8c564b',
    '#e377c2', '#7f7f7f', '#bcbd22'];

  // colours of the designs in the 3-D view and plots: the last (optimised) in full colour,
  // earlier ones in greys
  const designStyle = [
    { dash: null, width: 1.8, alpha: 1.0 },
    { dash: [6, 4], width: 1.5, alpha: 0.45 },
  ];

  // ------------------------------------------------------------------------------------------
  // libraries: the modules of three.js are imported from blob URLs made of their inlined text

  async function loadLibraries() {
    const text = (id) => $(id).textContent;
    const url = (source) => URL.createObjectURL(new Blob([source], { type: 'text/javascript' }));
    const core = url(text('lib-three-core'));
    const three = url(text('lib-three').split('./three.core.min.js').join(core));
    const THREE = await import(three);
    const orbit = await import(url(text('lib-orbit').split("from 'three'").join("from '" + three + "'")));
    if (typeof window.uPlot !== 'function') throw new Error('uPlot did not load');
    return { THREE, OrbitControls: orbit.OrbitControls, uPlot: window.uPlot };
  }

  // ------------------------------------------------------------------------------------------
  // plots: one uPlot panel per output, the designs overlaid, a cursor line at the current time;
  // a column that varies by less than NOISE of its unit's scale is noise and drawn as its mean

  const NOISE = 1e-8;

  // the scale of each unit: the largest |value| of its columns over all designs
  function unitScales(designs, outputs) {
    const scale = {};
    for (const o of outputs)
      for (const c of o.columns)
        for (const d of designs) {
          const s = d.stats[c];
          if (!s) continue;
          const key = o.unit || '#' + o.name;
          scale[key] = Math.max(scale[key] || 0, Math.abs(s[0] || 0), Math.abs(s[1] || 0));
        }
    return scale;
  }

  // for a column: {noise, mean, range} over all designs
  function columnNoise(designs, column, scale) {
    let lo = Infinity, hi = -Infinity, sum = 0, n = 0;
    for (const d of designs) {
      const s = d.stats[column];
      if (!s || s[0] === null) continue;
      lo = Math.min(lo, s[0]);
      hi = Math.max(hi, s[1]);
      sum += s[2];
      n++;
    }
    if (!n) return { noise: false };
    const range = hi - lo;
    const reference = Math.max(scale, Math.abs(lo), Math.abs(hi));
    return { noise: range <= NOISE * reference, mean: sum / n, range, reference };
  }

  // tick labels: on a log scale only whole decades, at most about six of them
  function yLabels(splits, log) {
    if (!log) return splits.map((v) => fmt(v, 3));
    const decades = splits.filter((v) => v > 0 && Math.abs(Math.log10(v) - Math.round(Math.log10(v))) < 1e-9);
    const every = Math.max(1, Math.ceil(decades.length / 6));
    return splits.map((v) => {
      const e = Math.log10(v);
      return v > 0 && Math.abs(e - Math.round(e)) < 1e-9 && Math.round(e) % every === 0 ? fmt(v, 2) : '';
    });
  }

  function makePanel(lib, parent, spec) {
    // spec: {title, unit, x: [...], xLabel, series: [{label, values, color, dash, width}],
    //        targets: [..], yLog, noise: note text or '', range: [lo, hi] or null, onPick(x)}
    const box = element('div', { class: 'panel' }, parent);
    if (spec.noise) element('div', { class: 'note' }, box, spec.noise);
    const width = Math.max(280, box.clientWidth - 8);
    const targets = spec.targets || [];
    const opts = {
      title: spec.title + (spec.unit ? ' [' + spec.unit + ']' : ''),
      width,
      height: spec.height || 170,
      scales: {
        x: { time: false },
        y: spec.yLog
          ? { distr: 3, log: 10 }
          : {
              range: (u, min, max) => {
                if (spec.range) return spec.range;
                let lo = Math.min(min, ...targets), hi = Math.max(max, ...targets);
                if (!isFinite(lo) || !isFinite(hi)) return [0, 1];
                if (hi - lo <= 1e-300 + 1e-12 * Math.abs(hi)) {
                  const pad = Math.abs(hi) * 0.05 || 1;
                  return [lo - pad, hi + pad];
                }
                const pad = 0.06 * (hi - lo);
                return [lo - pad, hi + pad];
              },
            },
      },
      series: [{ label: spec.xLabel }].concat(
        spec.series.map((s) => ({
          label: s.label,
          stroke: s.color,
          width: s.width || 1.6,
          dash: s.dash || undefined,
          points: { show: s.points || false, size: 5 },
          paths: s.width === 0 ? () => null : undefined,
          spanGaps: s.spanGaps !== false,
        })),
      ),
      axes: [{ label: spec.xLabel, labelSize: 20 }, { size: 64, values: (u, splits) => yLabels(splits, spec.yLog) }],
      legend: { live: true },
      cursor: { drag: { x: false, y: false } },
      hooks: {
        draw: [
          (u) => {
            // dashed reference lines at the targets
            const ctx = u.ctx;
            ctx.save();
            ctx.setLineDash([6, 4]);
            ctx.strokeStyle = '#555';
            ctx.lineWidth = 1;
            for (const v of targets) {
              const y = u.valToPos(v, 'y', true);
              if (y < u.bbox.top || y > u.bbox.top + u.bbox.height) continue;
              ctx.beginPath();
              ctx.moveTo(u.bbox.left, y);
              ctx.lineTo(u.bbox.left + u.bbox.width, y);
              ctx.stroke();
            }
            ctx.restore();
          },
        ],
      },
    };
    const data = [spec.x].concat(spec.series.map((s) => s.values));
    const plot = new lib.uPlot(opts, data, box);
    const line = element('div', { class: 'cursor-line' }, plot.over);
    line.style.display = 'none';
    if (spec.onPick)
      plot.over.addEventListener('mousedown', () => {
        const x = plot.posToVal(plot.cursor.left, 'x');
        if (isFinite(x)) spec.onPick(x);
      });
    return {
      plot,
      box,
      setCursor(x) {
        const px = plot.valToPos(x, 'x');
        line.style.display = isFinite(px) ? '' : 'none';
        line.style.left = px + 'px';
      },
      resize() {
        plot.setSize({ width: Math.max(280, box.clientWidth - 8), height: spec.height || 170 });
      },
    };
  }

  // the time histories of the designs, one panel per output
  function timePlots(lib, parent, designs, onPick) {
    const outputs = designs[0].outputs;
    const scales = unitScales(designs, outputs);
    const longest = designs.reduce((a, d) => (d.samples[0].length > a.samples[0].length ? d : a));
    const t = longest.samples[0];
    const panels = [];
    const noise = (api.noise = []);
    for (const o of outputs) {
      const series = [], notes = [];
      let allNoise = true, mean = 0, reference = 0;
      o.columns.forEach((c, k) => {
        const n = columnNoise(designs, c, scales[o.unit || '#' + o.name] || 0);
        if (n.noise) {
          noise.push({ panel: o.name, column: o.labels[k], mean: n.mean, range: n.range, reference: n.reference });
          notes.push((o.columns.length > 1 ? o.labels[k] + ': ' : '') + 'noise, mean ' + fmt(n.mean) +
            ', range ' + fmt(n.range, 2) + (o.unit ? ' ' + o.unit : '') + ' (below ' + NOISE +
            ' of ' + fmt(n.reference, 2) + ')');
          mean = n.mean;
          reference = Math.max(reference, n.reference);
        } else allNoise = false;
        designs.forEach((d, i) => {
          const style = designStyle[designs.length - 1 - i] || designStyle[0];
          const raw = d.samples[c + 1];
          const values = t.map((_, j) => (j < raw.length ? (n.noise ? n.mean : raw[j]) : null));
          series.push({
            label: o.labels[k] + (designs.length > 1 ? ' (' + d.label + ')' : ''),
            values,
            color: palette[k % palette.length] + (style.alpha < 1 ? '88' : ''),
            dash: style.dash,
            width: style.width,
          });
        });
      });
      const half = 0.5 * (reference || Math.abs(mean) || 1);
      panels.push(
        makePanel(lib, parent, {
          title: o.name,
          unit: o.unit,
          x: t,
          xLabel: 't [s]',
          series,
          targets: o.targets.flat(),
          noise: notes.join('; '),
          range: allNoise && o.columns.length ? [mean - half, mean + half] : null,
          onPick,
        }),
      );
    }
    return panels;
  }

  // ------------------------------------------------------------------------------------------
  // the 3-D scene of the designs

  function pose(THREE, frames, nbody, t, out) {
    // interpolated origins and orientations of every body at time t: out[b] = {p, q}
    let lo = 0, hi = frames.length - 1;
    if (t <= frames[0][0]) hi = 0;
    else if (t >= frames[hi][0]) lo = hi;
    else
      while (hi - lo > 1) {
        const mid = (lo + hi) >> 1;
        if (frames[mid][0] <= t) lo = mid;
        else hi = mid;
      }
    const a = frames[lo], b = frames[hi];
    const s = hi > lo ? (t - a[0]) / (b[0] - a[0]) : 0;
    const qa = new THREE.Quaternion(), qb = new THREE.Quaternion();
    for (let k = 0; k < nbody; k++) {
      const i = 1 + 7 * k;
      out[k].p.set(a[i] + s * (b[i] - a[i]), a[i + 1] + s * (b[i + 1] - a[i + 1]), a[i + 2] + s * (b[i + 2] - a[i + 2]));
      qa.set(a[i + 4], a[i + 5], a[i + 6], a[i + 3]);
      qb.set(b[i + 4], b[i + 5], b[i + 6], b[i + 3]);
      out[k].q.copy(qa).slerp(qb, s);
    }
    return { frame: s < 0.5 ? a : b };
  }

  // edges of a minimum spanning tree over points (Prim): a body's skeleton between its markers
  function spanningTree(points) {
    const n = points.length, edges = [];
    if (n < 2) return edges;
    const inTree = new Array(n).fill(false), best = new Array(n).fill(Infinity), from = new Array(n).fill(-1);
    best[0] = 0;
    for (let it = 0; it < n; it++) {
      let u = -1;
      for (let i = 0; i < n; i++) if (!inTree[i] && (u < 0 || best[i] < best[u])) u = i;
      inTree[u] = true;
      if (from[u] >= 0) edges.push([from[u], u]);
      for (let i = 0; i < n; i++) {
        const d = points[u].distanceTo(points[i]);
        if (!inTree[i] && d < best[i]) (best[i] = d), (from[i] = u);
      }
    }
    return edges;
  }

  function buildScene(lib, canvas, designs) {
    const THREE = lib.THREE;
    const V = (a) => new THREE.Vector3(a[0], a[1], a[2]);
    const g0 = designs[designs.length - 1].geometry;
    const planar = g0.dim === 2;
    const renderer = new THREE.WebGLRenderer({ canvas, antialias: true, preserveDrawingBuffer: true });
    renderer.setPixelRatio(window.devicePixelRatio || 1);
    const scene = new THREE.Scene();
    scene.background = new THREE.Color(0xf4f5f7);

    // up: against gravity (a planar model's +y, a spatial one's +z without gravity)
    const g = V(g0.gravity);
    const up = g.lengthSq() > 0 ? g.clone().negate().normalize() : planar ? new THREE.Vector3(0, 1, 0) : new THREE.Vector3(0, 0, 1);

    // the extent of the motion (body origins over all frames) and the mechanism's size at t = 0
    const box = new THREE.Box3(), box0 = new THREE.Box3();
    for (const d of designs) {
      const nb = d.geometry.bodies.length;
      for (const f of d.frames) for (let b = 0; b < nb; b++) box.expandByPoint(new THREE.Vector3(f[1 + 7 * b], f[2 + 7 * b], f[3 + 7 * b]));
      const f0 = d.frames[0];
      d.geometry.bodies.forEach((body, b) => {
        const o = new THREE.Vector3(f0[1 + 7 * b], f0[2 + 7 * b], f0[3 + 7 * b]);
        const q = new THREE.Quaternion(f0[5 + 7 * b], f0[6 + 7 * b], f0[7 + 7 * b], f0[4 + 7 * b]);
        for (const m of body.markers) box0.expandByPoint(V(m.p).applyQuaternion(q).add(o));
        box0.expandByPoint(V(body.com).applyQuaternion(q).add(o));
      });
      for (const m of d.geometry.ground) box0.expandByPoint(V(m.p));
    }
    box.union(box0);
    const size0 = box0.getSize(new THREE.Vector3());
    const L = Math.max(size0.length(), 1e-3);
    const R = { link: 0.011 * L, joint: 0.03 * L, thin: 0.015 * L };

    // lights
    scene.add(new THREE.HemisphereLight(0xffffff, 0x667788, 2.2));
    const sun = new THREE.DirectionalLight(0xffffff, 1.6);
    sun.position.copy(up.clone().multiplyScalar(3).add(new THREE.Vector3(1, -2, 1)).multiplyScalar(L));
    scene.add(sun);

    // ground: grid in the plane of a planar model, else across up at the lowest point (the road's
    // height with tyres), and the global frame
    const tyres = g0.forces.filter((f) => f.type === 'tyre');
    const extent = box.getSize(new THREE.Vector3()).length() + L;
    const cell = Math.pow(10, Math.floor(Math.log10(extent / 12)));
    const cells = Math.ceil(extent / cell / 2) * 2 + 4;
    const grid = new THREE.GridHelper(cells * cell, cells, 0xb0b6c0, 0xd6dae0);
    const normal = planar ? new THREE.Vector3(0, 0, 1) : up.clone();
    grid.quaternion.setFromUnitVectors(new THREE.Vector3(0, 1, 0), normal);
    const centre = box.getCenter(new THREE.Vector3());
    let low = tyres.length ? 0 : Infinity;
    if (!tyres.length) {
      for (const x of [box.min.x, box.max.x]) for (const y of [box.min.y, box.max.y]) for (const z of [box.min.z, box.max.z])
        low = Math.min(low, up.dot(new THREE.Vector3(x, y, z)));
      low -= 0.05 * L;
    }
    if (planar) grid.position.set(centre.x, centre.y, -0.08 * L);
    else grid.position.copy(centre.clone().sub(up.clone().multiplyScalar(up.dot(centre) - low + 1e-4 * L)));
    grid.position.x = Math.round(grid.position.x / cell) * cell;
    if (planar) grid.position.y = Math.round(grid.position.y / cell) * cell;
    scene.add(grid);
    const axes = new THREE.AxesHelper(0.25 * L);
    scene.add(axes);

    // the road of the tyres: h(x) = H (1 + tanh((x - x0) / w)) / 2, across the wheels' lanes
    if (tyres.length) {
      const road = tyres[0].road;
      const h = (x) => (road[2] > 0 ? (road[1] * (1 + Math.tanh((x - road[0]) / road[2]))) / 2 : 0);
      const x0 = box.min.x - 0.3 * L, x1 = box.max.x + 0.3 * L;
      const xs = [];
      for (let i = 0; i <= 200; i++) xs.push(x0 + ((x1 - x0) * i) / 200);
      if (road[2] > 0) for (let k = -12; k <= 12; k++) xs.push(road[0] + (k * road[2]) / 3);
      xs.sort((a, b) => a - b);
      // across the wheels' lanes: their centres over the run, a radius and a half to each side
      let y0 = Infinity, y1 = -Infinity;
      for (const d of designs)
        for (const t of d.geometry.forces.filter((f) => f.type === 'tyre'))
          for (const f of d.frames) {
            const i = 1 + 7 * t.body;
            const c = V(t.p).applyQuaternion(new THREE.Quaternion(f[i + 4], f[i + 5], f[i + 6], f[i + 3]));
            y0 = Math.min(y0, f[i + 1] + c.y - 1.5 * t.radius);
            y1 = Math.max(y1, f[i + 1] + c.y + 1.5 * t.radius);
          }
      const position = [], index = [];
      xs.forEach((x, i) => {
        position.push(x, y0, h(x), x, y1, h(x));
        if (i) index.push(2 * i - 2, 2 * i - 1, 2 * i, 2 * i - 1, 2 * i + 1, 2 * i);
      });
      const geometry = new THREE.BufferGeometry();
      geometry.setAttribute('position', new THREE.Float32BufferAttribute(position, 3));
      geometry.setIndex(index);
      geometry.computeVertexNormals();
      const mesh = new THREE.Mesh(geometry, new THREE.MeshStandardMaterial({ color: 0x8a8f98, roughness: 0.9, side: THREE.DoubleSide }));
      mesh.position.z = -1e-4 * L;
      scene.add(mesh);
    }

    // a cylinder between two points of one frame
    function bar(a, b, radius, material) {
      const d = b.clone().sub(a), len = d.length();
      const mesh = new THREE.Mesh(new THREE.CylinderGeometry(radius, radius, Math.max(len, 1e-9), 12), material);
      mesh.position.copy(a).add(b).multiplyScalar(0.5);
      if (len > 0) mesh.quaternion.setFromUnitVectors(new THREE.Vector3(0, 1, 0), d.normalize());
      return mesh;
    }

    function along(mesh, axis) {
      if (axis && axis.lengthSq() > 0) mesh.quaternion.setFromUnitVectors(new THREE.Vector3(0, 1, 0), axis.clone().normalize());
      return mesh;
    }

    // a joint's symbol in the frame of its first body
    function jointSymbol(j, material, planarModel) {
      const p = V(j.p);
      const axis = planarModel && (j.type === 'revolute' || j.type === 'fixed') ? new THREE.Vector3(0, 0, 1) : j.paxis ? V(j.paxis) : new THREE.Vector3(0, 0, 1);
      const s = R.joint;
      const group = new THREE.Group();
      let mesh;
      switch (j.type) {
        case 'revolute':
          mesh = along(new THREE.Mesh(new THREE.CylinderGeometry(s * 0.6, s * 0.6, s * 1.6, 20), material), axis);
          break;
        case 'cylindrical':
          mesh = along(new THREE.Mesh(new THREE.CylinderGeometry(s * 0.45, s * 0.45, s * 3.2, 16), material), axis);
          break;
        case 'prismatic':
          mesh = along(new THREE.Mesh(new THREE.BoxGeometry(s * 0.5, s * 4, s * 0.5), material), axis);
          break;
        case 'spherical':
          mesh = new THREE.Mesh(new THREE.SphereGeometry(s * 0.75, 20, 14), material);
          break;
        case 'universal': {
          mesh = new THREE.Group();
          mesh.add(along(new THREE.Mesh(new THREE.CylinderGeometry(s * 0.3, s * 0.3, s * 2, 10), material), axis));
          const other = new THREE.Vector3(1, 0, 0);
          if (Math.abs(other.dot(axis.clone().normalize())) > 0.9) other.set(0, 1, 0);
          mesh.add(along(new THREE.Mesh(new THREE.CylinderGeometry(s * 0.3, s * 0.3, s * 2, 10), material), other.cross(axis).normalize()));
          break;
        }
        case 'planar':
          mesh = along(new THREE.Mesh(new THREE.BoxGeometry(s * 2.4, s * 0.25, s * 2.4), material), axis);
          break;
        default:
          mesh = new THREE.Mesh(new THREE.BoxGeometry(s, s, s), material);
      }
      group.add(mesh);
      group.position.copy(p);
      return group;
    }

    // the designs: bodies as groups placed by the recorded frames
    const built = designs.map((d, di) => {
      const geometry = d.geometry;
      const style = designStyle[designs.length - 1 - di] || designStyle[0];
      const faded = style.alpha < 1;
      const mat = (color, opacity) =>
        new THREE.MeshStandardMaterial({
          color: faded ? 0x8892a0 : color,
          roughness: 0.55,
          metalness: 0.1,
          transparent: faded || opacity < 1,
          opacity: (faded ? 0.45 : 1) * opacity,
          depthWrite: !(faded || opacity < 1),
        });
      const root = new THREE.Group();
      scene.add(root);
      const wheelBodies = new Set(geometry.forces.filter((f) => f.type === 'tyre').map((f) => f.body));
      const jointMaterial = mat(0x39414f, 1);
      const bodies = geometry.bodies.map((body, b) => {
        const group = new THREE.Group();
        root.add(group);
        const color = new THREE.Color(palette[b % palette.length]).getHex();
        const solid = mat(color, 1), clear = mat(color, 0.16);
        // the skeleton between the markers (the centre of mass when there is one marker)
        const points = [];
        for (const m of body.markers) {
          const p = V(m.p);
          if (!points.some((q) => q.distanceTo(p) < 1e-6 * L)) points.push(p);
        }
        const com = V(body.com);
        if (points.length === 1 && points[0].distanceTo(com) > 1e-6 * L) points.push(com);
        for (const [a, c] of spanningTree(points)) group.add(bar(points[a], points[c], R.link, solid));
        // a box at the centre of mass with the principal moments of the body's inertia (planar:
        // Izz, shaped like the markers' spread); wheels are drawn as discs instead
        if (!wheelBodies.has(b)) {
          let dims;
          const m = body.mass, I = body.inertia;
          if (planar) {
            let sx = 0, sy = 0;
            for (const p of points) (sx += (p.x - com.x) ** 2), (sy += (p.y - com.y) ** 2);
            sx = Math.sqrt(sx / Math.max(points.length, 1));
            sy = Math.sqrt(sy / Math.max(points.length, 1));
            const e = 0.08 * (sx + sy) + 1e-9;
            const ratio = (sx + e) / (sy + e);
            const b2 = (12 * I[2]) / m / (ratio * ratio + 1);
            dims = [ratio * Math.sqrt(b2), Math.sqrt(b2), Math.min(ratio, 1) * Math.sqrt(b2) * 0.5];
          } else {
            dims = [
              Math.sqrt(Math.max(0, (6 * (I[1] + I[2] - I[0])) / m)),
              Math.sqrt(Math.max(0, (6 * (I[0] + I[2] - I[1])) / m)),
              Math.sqrt(Math.max(0, (6 * (I[0] + I[1] - I[2])) / m)),
            ];
          }
          const reach = points.reduce((a, p) => Math.max(a, p.distanceTo(com)), 0) * 2 || 0.3 * L;
          dims = dims.map((x) => Math.min(Math.max(x, R.thin), Math.max(reach, R.thin)));
          const massBox = new THREE.Mesh(new THREE.BoxGeometry(dims[0], dims[1], dims[2]), clear);
          massBox.position.copy(com);
          group.add(massBox);
        }
        return group;
      });
      // the ground's markers
      for (const m of geometry.ground) {
        const s = new THREE.Mesh(new THREE.TetrahedronGeometry(R.joint * 0.9), mat(0x555b66, 1));
        s.position.copy(V(m.p));
        root.add(s);
      }
      // joints on their first body
      for (const j of geometry.joints) (j.body >= 0 ? bodies[j.body] : root).add(jointSymbol(j, jointMaterial, planar));
      // tyres: discs with spokes on the wheel's body, so that its spin shows
      for (const f of geometry.forces.filter((f) => f.type === 'tyre')) {
        const wheel = new THREE.Group();
        const r = f.radius;
        const tread = mat(0x24262b, 1), rim = mat(0xc8ccd4, 1);
        wheel.add(new THREE.Mesh(new THREE.CylinderGeometry(r, r, 0.3 * r, 40, 1, true), tread));
        for (const side of [-1, 1]) {
          const disc = new THREE.Mesh(new THREE.CircleGeometry(r, 40), tread);
          disc.rotation.x = (side * Math.PI) / 2;
          disc.position.y = (side * 0.15 * r);
          wheel.add(disc);
        }
        for (let k = 0; k < 3; k++) {
          const spoke = new THREE.Mesh(new THREE.BoxGeometry(1.9 * r, 0.34 * r, 0.12 * r), rim);
          spoke.rotation.y = (k * Math.PI) / 3;
          wheel.add(spoke);
        }
        wheel.position.copy(V(f.p));
        along(wheel, f.paxis ? V(f.paxis) : new THREE.Vector3(0, 1, 0));
        bodies[f.body].add(wheel);
      }
      // springs as coils between their markers, point forces and torques as arrows (world)
      const springs = geometry.forces.map((f, i) => {
        if (f.type === 'spring') {
          const turns = 10, per = 16, pts = [];
          for (let k = 0; k <= turns * per; k++) {
            const a = (2 * Math.PI * k) / per;
            pts.push(new THREE.Vector3(Math.cos(a), k / (turns * per) - 0.5, Math.sin(a)));
          }
          const line = new THREE.Line(new THREE.BufferGeometry().setFromPoints(pts),
            new THREE.LineBasicMaterial({ color: faded ? 0x8892a0 : 0x7a4d12, transparent: faded, opacity: faded ? 0.5 : 1 }));
          root.add(line);
          return { i, f, line };
        }
        if (f.type === 'force' || f.type === 'torque') {
          const arrow = new THREE.ArrowHelper(new THREE.Vector3(1, 0, 0), new THREE.Vector3(), L * 0.1,
            f.type === 'force' ? 0xcc2222 : 0x7a22cc, 0.03 * L, 0.015 * L);
          root.add(arrow);
          return { i, f, arrow };
        }
        return null;
      }).filter(Boolean);
      // the largest force and torque of the run, for the arrows' lengths
      const nb = geometry.bodies.length;
      const largest = {};
      for (const s of springs)
        if (s.arrow)
          for (const fr of d.frames) {
            const k = 1 + 7 * nb + 3 * s.i;
            largest[s.f.type] = Math.max(largest[s.f.type] || 0, Math.hypot(fr[k], fr[k + 1], fr[k + 2]));
          }
      const poses = geometry.bodies.map(() => ({ p: new THREE.Vector3(), q: new THREE.Quaternion() }));
      return { d, root, bodies, springs, poses, largest, offset: new THREE.Vector3() };
    });

    // side by side: each earlier design shifted across the motion by the mechanism's width
    const lateral = planar ? new THREE.Vector3(1, 0, 0) : Math.abs(up.z) > 0.9 ? new THREE.Vector3(0, 1, 0) : new THREE.Vector3(0, 0, 1);
    const width = Math.abs(lateral.dot(size0)) * 1.3 + 0.2 * L;

    const local = new THREE.Vector3(), a = new THREE.Vector3(), b = new THREE.Vector3();
    function worldPoint(design, body, p, out) {
      out.set(p[0], p[1], p[2]);
      if (body >= 0) out.applyQuaternion(design.poses[body].q).add(design.poses[body].p);
      return out.add(design.offset);
    }

    function update(t, sideBySide) {
      built.forEach((s, k) => {
        const nb = s.d.geometry.bodies.length;
        s.offset.copy(lateral).multiplyScalar(sideBySide ? (built.length - 1 - k) * width : 0);
        const { frame } = pose(THREE, s.d.frames, nb, t, s.poses);
        s.root.position.copy(s.offset);
        s.bodies.forEach((g, b) => {
          g.position.copy(s.poses[b].p);
          g.quaternion.copy(s.poses[b].q);
        });
        for (const e of s.springs) {
          if (e.line) {
            worldPoint(s, e.f.body, e.f.p, a).sub(s.offset);
            worldPoint(s, e.f.body2, e.f.p2, b).sub(s.offset);
            const len = a.distanceTo(b);
            e.line.position.copy(a).add(b).multiplyScalar(0.5);
            e.line.scale.set(0.06 * L * 0.5, Math.max(len, 1e-9), 0.06 * L * 0.5);
            if (len > 0) e.line.quaternion.setFromUnitVectors(new THREE.Vector3(0, 1, 0), local.copy(b).sub(a).normalize());
          } else {
            const k = 1 + 7 * nb + 3 * e.i;
            local.set(frame[k], frame[k + 1], frame[k + 2]);
            const n = local.length(), most = s.largest[e.f.type] || 1;
            e.arrow.visible = n > 0;
            if (n > 0) {
              e.arrow.setDirection(local.normalize());
              e.arrow.setLength(0.05 * L + (0.15 * L * n) / most, 0.03 * L, 0.015 * L);
            }
            if (e.f.type === 'force') worldPoint(s, e.f.body, e.f.p, a).sub(s.offset);
            else worldPoint(s, e.f.body, s.d.geometry.bodies[e.f.body].com, a).sub(s.offset);
            e.arrow.position.copy(a);
          }
        }
      });
    }

    // the camera: a planar model seen across its plane, a spatial one from the front-left above
    const camera = new THREE.PerspectiveCamera(40, 1, L * 1e-3, L * 1e3 + extent * 10);
    camera.up.copy(planar ? up : up);
    const controls = new lib.OrbitControls(camera, canvas);
    const start = box0.getCenter(new THREE.Vector3());
    const radius = 0.62 * L;
    function home() {
      const dir = planar
        ? new THREE.Vector3(0, 0, 1)
        : (Math.abs(up.z) > 0.9 ? new THREE.Vector3(0.9, -1.6, 0.8 * Math.sign(up.z)) : new THREE.Vector3(0.9, 0.8 * Math.sign(up.y), 1.6)).normalize();
      const dist = (1.25 * radius) / Math.sin((camera.fov * Math.PI) / 360);
      controls.target.copy(start);
      camera.position.copy(start).addScaledVector(dir, dist);
      camera.updateProjectionMatrix();
      controls.update();
    }
    home();

    // follow: the camera moves with the centroid of the last design's bodies
    const last = built[built.length - 1];
    function centroid(out) {
      out.set(0, 0, 0);
      for (const p of last.poses) out.add(p.p);
      return out.multiplyScalar(1 / Math.max(last.poses.length, 1)).add(last.offset);
    }
    const travel = (() => {
      const f0 = last.d.frames[0], f1 = last.d.frames[last.d.frames.length - 1], nb = last.d.geometry.bodies.length;
      let dx = 0, dy = 0, dz = 0;
      for (let b = 0; b < nb; b++) (dx += f1[1 + 7 * b] - f0[1 + 7 * b]), (dy += f1[2 + 7 * b] - f0[2 + 7 * b]), (dz += f1[3 + 7 * b] - f0[3 + 7 * b]);
      return Math.hypot(dx, dy, dz) / Math.max(nb, 1);
    })();

    function resize() {
      const w = canvas.clientWidth, h = canvas.clientHeight;
      if (canvas.width !== Math.round(w * renderer.getPixelRatio()) || canvas.height !== Math.round(h * renderer.getPixelRatio())) {
        renderer.setSize(w, h, false);
        camera.aspect = w / Math.max(h, 1);
        camera.updateProjectionMatrix();
      }
    }

    return {
      update,
      render() {
        resize();
        controls.update();
        renderer.render(scene, camera);
      },
      follow: { centroid, travel, L, camera, controls },
      home,
      background: [244, 245, 247],
      setVisible(k, visible) {
        built[k].root.visible = visible;
      },
    };
  }

  // ------------------------------------------------------------------------------------------
  // the viewer: scene, controls and plots of the designs, all on one time

  function viewer(lib, designs) {
    const canvas = $('scene');
    const view = buildScene(lib, canvas, designs);
    const t0 = Math.min(...designs.map((d) => d.frames[0][0]));
    const t1 = Math.max(...designs.map((d) => d.frames[d.frames.length - 1][0]));
    let t = t0, playing = true, speed = 1, sideBySide = false, last = null;
    const slider = $('time'), clock = $('clock'), play = $('play'), follow = $('follow');
    const f = view.follow;
    follow.checked = f.travel > 0.5 * f.L;
    const track = new lib.THREE.Vector3(), was = new lib.THREE.Vector3();

    // the designs' legend, with a switch for each and the layout
    const legend = $('designs');
    designs.forEach((d, k) => {
      const style = designStyle[designs.length - 1 - k] || designStyle[0];
      const label = element('label', {}, legend);
      const box = element('input', { type: 'checkbox' }, label);
      box.checked = true;
      box.addEventListener('change', () => {
        view.setVisible(k, box.checked);
        draw();
      });
      const sw = element('span', { class: 'swatch' }, label);
      sw.style.background = style.alpha < 1 ? '#8892a0' : palette[0];
      if (style.dash) sw.style.background = 'repeating-linear-gradient(90deg,#8892a0 0 6px,transparent 6px 10px)';
      label.appendChild(document.createTextNode(d.label + (d.completed ? '' : ' (' + d.status + ')')));
    });
    if (designs.length > 1) {
      const label = element('label', {}, legend);
      const box = element('input', { type: 'checkbox' }, label);
      label.appendChild(document.createTextNode('side by side'));
      box.addEventListener('change', () => {
        sideBySide = box.checked;
        draw();
      });
    }

    // the designs' parameters and functionals, side by side
    const facts = $('facts');
    const table = element('table', {}, facts);
    const head = element('tr', {}, table);
    element('th', {}, head, '');
    for (const d of designs) element('th', {}, head, d.label);
    const names = Object.keys(designs[designs.length - 1].parameters);
    const rows = names.map((n) => ['parameter ' + n, designs.map((d) => d.parameters[n])])
      .concat(Object.keys(designs[0].functionals).map((n) => ['functional ' + n, designs.map((d) => d.functionals[n])]));
    for (const [name, values] of rows.slice(0, 40)) {
      const tr = element('tr', {}, table);
      element('td', {}, tr, name);
      for (const v of values) element('td', {}, tr, fmt(v, 6));
    }

    const plots = timePlots(lib, $('plots'), designs, (x) => {
      setTime(x);
    });
    window.addEventListener('resize', () => plots.forEach((p) => p.resize()));

    function draw() {
      view.update(t, sideBySide);
      if (follow.checked) {
        f.centroid(track);
        if (last !== null) {
          const d = track.clone().sub(was);
          f.camera.position.add(d);
          f.controls.target.add(d);
        }
        was.copy(track);
        last = t;
      } else last = null;
      view.render();
      slider.value = String(Math.round(((t - t0) / (t1 - t0 || 1)) * 1000));
      clock.textContent = 't = ' + t.toFixed(3) + ' s';
      for (const p of plots) p.setCursor(t);
    }

    function setTime(x) {
      t = Math.min(Math.max(x, t0), t1);
      draw();
    }

    function setPlaying(on) {
      playing = on;
      play.innerHTML = on ? '&#10074;&#10074;' : '&#9654;';
    }

    play.addEventListener('click', () => setPlaying(!playing));
    slider.addEventListener('input', () => {
      setPlaying(false);
      setTime(t0 + ((t1 - t0) * Number(slider.value)) / 1000);
    });
    $('speed').addEventListener('change', (e) => (speed = Number(e.target.value)));
    follow.addEventListener('change', draw);
    $('reset').addEventListener('click', () => {
      view.home();
      last = null;
      draw();
    });
    document.addEventListener('keydown', (e) => {
      if (e.code === 'Space' && e.target === document.body) {
        e.preventDefault();
        setPlaying(!playing);
      }
    });
    // a design whose page is opened hidden (or by a test) starts paused
    setPlaying(!navigator.webdriver && document.visibilityState === 'visible' && !/[?&]paused/.test(location.search));

    let before = performance.now();
    function tick(now) {
      const dt = Math.min((now - before) / 1000, 0.1);
      before = now;
      if (playing) {
        t += dt * speed;
        if (t > t1) t = t0;
      }
      draw();
      requestAnimationFrame(tick);
    }
    draw();
    requestAnimationFrame(tick);

    // for the tests: the time, and the 3-D canvas's pixels after a render
    api.setTime = (x) => {
      setPlaying(false);
      setTime(x);
    };
    api.pause = () => setPlaying(false);
    api.span = [t0, t1];
    api.snapshot = () => {
      draw();
      const w = canvas.width, h = canvas.height;
      const c2 = document.createElement('canvas');
      c2.width = w;
      c2.height = h;
      const ctx = c2.getContext('2d');
      ctx.drawImage(canvas, 0, 0);
      const px = ctx.getImageData(0, 0, w, h).data;
      const [r0, g0, b0] = view.background;
      let differ = 0, hash = 2166136261;
      for (let i = 0; i < px.length; i += 4) {
        if (Math.abs(px[i] - r0) + Math.abs(px[i + 1] - g0) + Math.abs(px[i + 2] - b0) > 24) differ++;
        hash = Math.imul(hash ^ (px[i] * 65536 + px[i + 1] * 256 + px[i + 2]), 16777619) >>> 0;
      }
      return { width: w, height: h, differ, fraction: differ / (w * h), hash };
    };
  }

  // ------------------------------------------------------------------------------------------
  // the report of an optimisation: the problem, the algorithms' table, convergence, constraints
  // and the design variables' paths against evaluations

  // the best feasible objective after each evaluation of a run's history (null before the first)
  function bestFeasible(h) {
    let best = null;
    return h.objective.map((f, i) => {
      if (h.feasible[i] === 1 && !h.failed[i] && f !== null && (best === null || f < best)) best = f;
      return best;
    });
  }

  function report(lib, data) {
    const r = data.report, section = $('report');
    section.hidden = false;
    const runs = r.runs;
    const name = (run) => run.summary.algorithm;
    const best = runs[r.best];

    // the problem
    element('h2', {}, section, 'Problem');
    const dl = element('dl', { class: 'problem' }, section);
    const fact = (k, v) => {
      element('dt', {}, dl, k);
      element('dd', {}, dl, v);
    };
    fact('spec', data.spec);
    fact('objective', r.objective + ' (minimised)');
    fact('simulation', '0 .. ' + fmt(r.t_end) + ' s, h = ' + fmt(r.step) + ' s');
    fact('best', best ? name(best) + ': ' + fmt(best.summary.objective, 10) + (best.summary.feasible ? ', feasible' : ', infeasible') : 'none');
    const vars = element('table', { class: 'runs' }, section);
    let tr = element('tr', {}, vars);
    for (const h of ['design variable', 'lower', 'upper', 'scale', 'start', 'best']) element('th', {}, tr, h);
    r.variables.forEach((v, k) => {
      tr = element('tr', {}, vars);
      element('td', {}, tr, v.name);
      element('td', {}, tr, fmt(v.lower, 6));
      element('td', {}, tr, fmt(v.upper, 6));
      element('td', {}, tr, v.log ? 'log' : 'linear');
      element('td', {}, tr, fmt(runs[0].summary.start.x[k], 8));
      element('td', {}, tr, best ? fmt(best.summary.x[k], 8) : '');
    });
    if (r.constraints.length) {
      const cons = element('table', { class: 'runs' }, section);
      tr = element('tr', {}, cons);
      for (const h of ['constraint', 'lower', 'upper', 'start', 'best']) element('th', {}, tr, h);
      r.constraints.forEach((c, k) => {
        tr = element('tr', {}, cons);
        element('td', {}, tr, c.name);
        element('td', {}, tr, fmt(c.lower, 6));
        element('td', {}, tr, fmt(c.upper, 6));
        element('td', {}, tr, fmt(runs[0].summary.constraints[k].start, 6));
        element('td', {}, tr, best ? fmt(best.summary.constraints[k].value, 6) : '');
      });
    }

    // the algorithms
    element('h2', {}, section, 'Algorithms');
    const table = element('table', { class: 'runs' }, section);
    tr = element('tr', {}, table);
    for (const h of ['algorithm', 'status', 'objective', 'feasible', 'violation', 'evaluations', 'gradients',
      'feasible evaluations', 'failed', 'seconds', 'sensitivity'])
      element('th', {}, tr, h);
    for (const run of runs) {
      const s = run.summary;
      tr = element('tr', { title: s.message }, table);
      if (run === best) tr.style.fontWeight = '600';
      for (const v of [s.algorithm, s.status, fmt(s.objective, 10), s.feasible ? 'yes' : 'no', fmt(s.violation, 3),
        s.evaluations, s.gradient_evaluations, run.history.feasible.filter((x) => x === 1).length,
        s.failed_evaluations, fmt(s.seconds, 3), s.sensitivity_method || '-'])
        element('td', {}, tr, String(v));
    }

    // convergence against evaluations
    const n = Math.max(...runs.map((run) => run.history.objective.length));
    const x = Array.from({ length: n }, (_, i) => i + 1);
    const pad = (values) => x.map((_, i) => (i < values.length ? values[i] : null));
    const colour = (i) => palette[i % palette.length];
    element('h2', {}, section, 'Convergence');
    const grid = element('div', { class: 'report-plots' }, section);
    const bests = runs.map((run) => bestFeasible(run.history));
    const all = runs.flatMap((run) => run.history.objective).filter((f) => f !== null);
    const positive = all.length && all.every((f) => f > 0) && Math.max(...all) > 3 * Math.min(...all);
    const series = [];
    runs.forEach((run, i) => {
      const h = run.history;
      series.push({ label: name(run) + ' best feasible', values: pad(bests[i]), color: colour(i), width: 2 });
      series.push({ label: name(run) + ' feasible', values: pad(h.objective.map((f, j) => (h.feasible[j] === 1 ? f : null))),
        color: colour(i) + '99', width: 0, points: true, spanGaps: false });
      if (h.feasible.some((v) => v === 0))
        series.push({ label: name(run) + ' infeasible', values: pad(h.objective.map((f, j) => (h.feasible[j] === 0 ? f : null))),
          color: '#999999', width: 0, points: true, spanGaps: false });
    });
    const objectivePanel = makePanel(lib, grid, { title: 'objective ' + r.objective + ': every evaluation and the best feasible so far',
      x, xLabel: 'evaluation', series, yLog: positive, height: 260 });
    // the best feasible objective's distance to the best found, on a log scale
    const found = best && best.summary.feasible ? best.summary.objective : Math.min(...bests.flat().filter((f) => f !== null));
    const top = Math.max(...all.map(Math.abs), Math.abs(found) || 0);
    const floor = top > 0 ? 1e-15 * top : 1e-300;
    makePanel(lib, grid, { title: 'best feasible - best found (' + fmt(found, 10) + ')', x, xLabel: 'evaluation', yLog: true, height: 260,
      series: runs.map((run, i) => ({ label: name(run), values: pad(bests[i].map((f) => (f === null ? null : Math.max(f - found, floor)))), color: colour(i), width: 2 })) });
    // constraints against their bounds
    r.constraints.forEach((c, k) => {
      makePanel(lib, grid, { title: 'constraint ' + c.name + ' (bounds dashed)', x, xLabel: 'evaluation', height: 230,
        targets: [c.lower, c.upper].filter((b) => b !== null && isFinite(b)),
        series: runs.map((run, i) => ({ label: name(run), values: pad(run.history.c[k].values), color: colour(i), points: true })) });
    });
    // the design variables' paths
    element('h2', {}, section, 'Design variables');
    const paths = element('div', { class: 'report-plots' }, section);
    r.variables.forEach((v, k) => {
      makePanel(lib, paths, { title: v.name + ' (bounds dashed)', x, xLabel: 'evaluation', height: 230, yLog: v.log,
        targets: v.log ? [] : [v.lower, v.upper],
        series: runs.map((run, i) => ({ label: name(run), values: pad(run.history.x[k].values), color: colour(i), points: true })) });
    });

    // for the tests: the plotted best curves hold only feasible evaluations, each the lowest
    // feasible objective so far, within the constraints' bounds (1e-8 relative, the optimiser's
    // tolerance, checked here again from the values)
    const plotted = objectivePanel.plot.data;
    api.reportCheck = () => {
      const failures = [];
      let points = 0, lowerInfeasible = 0;
      runs.forEach((run, i) => {
        const h = run.history;
        const column = plotted[1 + series.findIndex((s) => s.label === name(run) + ' best feasible')];
        let lowest = null;
        for (let j = 0; j < h.objective.length; j++) {
          const f = h.objective[j];
          const within = r.constraints.every((c, k) => {
            const v = h.c[k].values[j];
            const lo = c.lower === null ? -Infinity : c.lower, hi = c.upper === null ? Infinity : c.upper;
            return v !== null && v >= lo - 1e-8 * Math.max(1, Math.abs(lo)) && v <= hi + 1e-8 * Math.max(1, Math.abs(hi));
          });
          if (h.feasible[j] === 1 && !within) failures.push(`${name(run)}: evaluation ${j + 1} is marked feasible but violates a constraint`);
          if (h.feasible[j] === 0 && f !== null && lowest !== null && f < lowest) lowerInfeasible++;
          if (h.feasible[j] === 1 && !h.failed[j] && f !== null && (lowest === null || f < lowest)) lowest = f;
          if (column[j] !== lowest)
            failures.push(`${name(run)}: the best curve is ${column[j]} at evaluation ${j + 1}, the lowest feasible objective so far is ${lowest}`);
          if (column[j] !== null) points++;
        }
      });
      return { runs: runs.length, bestPoints: points, lowerInfeasible, failures };
    };
  }

  // ------------------------------------------------------------------------------------------
  // the page

  async function main() {
    const data = JSON.parse($('mbopt-data').textContent);
    api.data = data;
    document.title = data.title;
    $('title').textContent = data.title;
    $('subtitle').textContent = (data.kind === 'report' ? 'Optimisation report: ' : '') + data.spec;
    $('footer').textContent = 'Made by ' + data.generator + ' with three.js and uPlot (inlined); ' +
      'every number on this page comes from the run that wrote it.';
    const lib = await loadLibraries();
    if (data.kind === 'report') report(lib, data);
    if (data.designs && data.designs.length) {
      if (data.kind === 'report') $('viewer-heading').hidden = false;
      viewer(lib, data.designs);
    } else $('viewer').hidden = true;
    api.ready = true;
  }

  main().catch(fail);
})();
