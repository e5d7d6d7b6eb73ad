"""A Jupyter kernel driven by jupyter_client (the hosted-notebook case):
start an ipykernel over ZeroMQ on tcp://127.0.0.1 (five ports), run cells
whose state carries over, a cell that raises, interrupt a sleeping cell
with SIGINT, shut down. Prints a transcript that must be the same natively
and sandboxed (no ports, ids or timings in it)."""
import os
import sys
import tempfile

os.environ["JUPYTER_RUNTIME_DIR"] = tempfile.mkdtemp(prefix="jrt-")
os.environ["PYDEVD_DISABLE_FILE_VALIDATION"] = "1"
os.environ.setdefault("HOME", tempfile.mkdtemp(prefix="jhome-"))

from jupyter_client import KernelManager  # noqa: E402

TIMEOUT = 60


def run_cell(kc, code, on_output=None):
    """Executes `code`; returns (reply status, outputs, error name). An
    error does not abort the cells after it (stop_on_error=False: with it,
    ipykernel aborts whatever arrives within a short time, a race).
    `on_output` is called once, when the cell's first output arrives."""
    msg_id = kc.execute(code, stop_on_error=False)
    outputs, ename = [], None
    while True:
        msg = kc.get_iopub_msg(timeout=TIMEOUT)
        if msg["parent_header"].get("msg_id") != msg_id:
            continue
        kind, content = msg["msg_type"], msg["content"]
        if kind == "stream":
            # ipykernel flushes a stream when its timer fires, so one
            # print() may arrive in pieces ('40', '\n'): join a stream's
            # consecutive pieces, as a notebook shows them.
            if outputs and outputs[-1][0] == content["name"]:
                outputs[-1] = (content["name"], outputs[-1][1] + content["text"])
            else:
                outputs.append((content["name"], content["text"]))
        elif kind == "execute_result":
            outputs.append(("result", content["data"]["text/plain"]))
        elif kind == "error":
            ename = content["ename"]
        elif kind == "status" and content["execution_state"] == "idle":
            break
        if outputs and on_output:
            on_output()
            on_output = None
    reply = kc.get_shell_msg(timeout=TIMEOUT)
    while reply["parent_header"].get("msg_id") != msg_id:
        reply = kc.get_shell_msg(timeout=TIMEOUT)
    return reply["content"]["status"], outputs, ename


def main():
    km = KernelManager(kernel_name="python3")
    km.kernel_cmd = [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"]
    km.start_kernel(extra_arguments=["--HistoryManager.enabled=False"])
    info = km.get_connection_info()
    ports = [info[k] for k in ("shell_port", "iopub_port", "stdin_port", "control_port", "hb_port")]
    print("transport", info["transport"], info["ip"], "ports", len(set(ports)), all(p > 0 for p in ports))
    kc = km.client()
    kc.start_channels()
    kc.wait_for_ready(timeout=TIMEOUT)
    print("ready")

    print("cell", run_cell(kc, "print(6*7)"))
    print("cell", run_cell(kc, "x = 20\nx + 22"))
    print("cell", run_cell(kc, "1/0"))
    print("cell", run_cell(kc, "print(x * 2)"))

    # Interrupted once the cell says it runs: ipykernel ignores SIGINT
    # between cells, so an interrupt sent on a timer (a second after the
    # request) was lost whenever the cell had not started by then.
    cell = "import time\nprint('sleeping', flush=True)\ntime.sleep(60)\nprint('slept')"
    status, outputs, ename = run_cell(kc, cell, km.interrupt_kernel)
    print("interrupted", status, outputs, ename)
    print("after interrupt", run_cell(kc, "print('alive', x)"))

    kc.stop_channels()
    km.shutdown_kernel(now=False)
    print("shutdown", km.is_alive(), km.has_kernel)
    print("done")


main()
