"""What the results scripts say of the machine they ran on."""
import platform


def cpu_name():
    """The processor's model name (/proc/cpuinfo), for the header of a results file."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"
