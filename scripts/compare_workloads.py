"""The workloads of scripts/compare: each row's name, its description in
the table, its command line (with "{scratch}" and "{data}" for the
column's scratch directory and the data directory), and the data
directory some rows read (a CSV, the many_reads programs and their files),
made once per run by `make_data`.

Owns what is run; not how a column runs it (compare_columns.py) nor the
table (scripts/compare).
"""

import os
import shutil
import subprocess
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PY = "/usr/bin/python3"

WALK = (
    "import os\n"
    "n = 0\n"
    "for _, dirs, files in os.walk('/usr/lib/python3'):\n"
    "    n += len(files) + len(dirs)\n"
    "assert n > 0, 'empty walk'\n"
)
FILES = (
    "import os, sys, tempfile\n"
    "d = tempfile.mkdtemp(dir=sys.argv[1])\n"
    "for i in range(10000):\n"
    "    p = f'{d}/f{i}'\n"
    "    with open(p, 'w'):\n"
    "        pass\n"
    "    os.stat(p)\n"
    "    os.unlink(p)\n"
    "os.rmdir(d)\n"
)
SQLITE = (
    "import os, shutil, sqlite3, sys, tempfile\n"
    "d = tempfile.mkdtemp(dir=sys.argv[1])\n"
    "c = sqlite3.connect(d + '/t.db', isolation_level=None)\n"
    "c.execute('create table t (a integer, b text)')\n"
    "for i in range(10000):\n"
    "    c.execute('insert into t values (?, ?)', (i, str(i)))\n"
    "assert c.execute('select count(*) from t').fetchone()[0] == 10000\n"
    "c.close()\n"
    "shutil.rmtree(d)\n"
)

HTTP = (
    "import http.server, threading, urllib.request\n"
    "class H(http.server.BaseHTTPRequestHandler):\n"
    "    def do_GET(self):\n"
    "        body = b'ok'\n"
    "        self.send_response(200)\n"
    "        self.send_header('Content-Length', str(len(body)))\n"
    "        self.end_headers()\n"
    "        self.wfile.write(body)\n"
    "    def log_message(self, *a):\n"
    "        pass\n"
    "s = http.server.ThreadingHTTPServer(('127.0.0.1', 0), H)\n"
    "threading.Thread(target=s.serve_forever, daemon=True).start()\n"
    "url = f'http://127.0.0.1:{s.server_address[1]}/'\n"
    "for _ in range(1000):\n"
    "    assert urllib.request.urlopen(url).read() == b'ok'\n"
    "s.shutdown()\n"
)

GROUPBY = (
    "import sys, pandas as pd\n"
    "df = pd.read_csv(sys.argv[1])\n"
    "g = df.groupby('key')['value'].agg(['sum', 'mean', 'count'])\n"
    "assert len(g) == 1000 and g['count'].sum() == 1_000_000\n"
)
PSUTIL = (
    "import psutil\n"
    "procs = [p.info for p in psutil.process_iter(['pid', 'name', 'cmdline', 'memory_info', 'cpu_times'])]\n"
    "assert procs, 'no processes'\n"
)

CSV_ROWS = 1_000_000
MUSL_FILES = 20_000

# Workloads that list the processes they see: natively the host's would
# be listed (a hundred and more, against a sandbox's two), so the native
# column runs them in a pid namespace and procfs of their own, as every
# sandbox column does; the namespace's set-up is in its time (and, not
# as root, a user namespace's, which the pid namespace then needs).
OWN_PIDS = {"ps", "psutil"}

# (name, description, argv[, copies]; "{scratch}" is replaced by the
# column's scratch dir; with copies, that many run at once and the time is
# until the last one ends)
WORKLOADS = [
    ("true", "`/bin/true`", ["/bin/true"]),
    ("py_pass", "`python3 -c pass`", [PY, "-c", "pass"]),
    (
        "py_imports",
        '`python3 -c "import json, decimal, asyncio, sqlite3"`',
        [PY, "-c", "import json, decimal, asyncio, sqlite3"],
    ),
    ("numpy", "`python3 -c \"import numpy\"`", [PY, "-c", "import numpy"]),
    ("pandas", "`python3 -c \"import pandas\"`", [PY, "-c", "import pandas"]),
    (
        "groupby",
        "pandas groupby over a 1,000,000-row CSV in a read-only mount (`--ro`)",
        [PY, "-c", GROUPBY, "{data}/rows.csv"],
    ),
    ("walk", "python `os.walk` over /usr/lib/python3", [PY, "-c", WALK]),
    ("files", "python create+stat+delete 10,000 files in scratch (/tmp)", [PY, "-c", FILES, "{scratch}"]),
    ("sqlite", "10,000 sqlite inserts (autocommit) in scratch (/tmp)", [PY, "-c", SQLITE, "{scratch}"]),
    ("http", "1,000 loopback HTTP requests (python http.server + urllib)", [PY, "-c", HTTP]),
    (
        "musl_reads",
        "a musl C program (`tests/c/many_reads.c`, musl-gcc) reading 20,000 small files of a "
        "read-only mount, each opened with open and with fopen (40,000 plain read opens)",
        ["{data}/many_reads.musl", "read", "{data}/files", str(MUSL_FILES)],
    ),
    (
        "static_reads",
        "a static glibc C program (`tests/c/many_reads.c`, `cc -static`) reading the same 20,000 "
        "files (40,000 plain read opens; under `run` through the static loader)",
        ["{data}/many_reads.static", "read", "{data}/files", str(MUSL_FILES)],
    ),
    (
        "go_reads",
        "a Go program (`tests/go/many_reads.go`, CGO_ENABLED=0: static, its own system calls) "
        "reading the same 20,000 files (20,000 plain read opens)",
        ["{data}/many_reads.go", "{data}/files", str(MUSL_FILES)],
    ),
    ("ps", "`ps aux` (natively under `unshare --pid --fork --mount-proc`)", ["ps", "aux"]),
    (
        "psutil",
        "a psutil process scan (pid, name, cmdline, memory_info, cpu_times of every process; "
        "natively under `unshare --pid --fork --mount-proc`)",
        [PY, "-c", PSUTIL],
    ),
    ("sixteen", "16 sandboxes of `python3 -c pass` started at once", [PY, "-c", "pass"], 16),
]


_DATA = []  # [dir] holding rows.csv once made


def make_data():
    """A directory with a CSV of CSV_ROWS rows (key: 1,000 groups, value)."""
    d = tempfile.mkdtemp(prefix="compare-data-", dir="/var/tmp")
    _DATA.append(d)
    with open(os.path.join(d, "rows.csv"), "w") as f:
        f.write("key,value\n")
        f.writelines(f"k{i % 1000},{(i * 7919) % 10007}\n" for i in range(CSV_ROWS))
    # musl_reads, static_reads and go_reads: the programs (where musl-gcc
    # and go are) and their files.
    if shutil.which("musl-gcc"):
        subprocess.run(["musl-gcc", "-O2", "-o", os.path.join(d, "many_reads.musl"),
                        os.path.join(ROOT, "tests/c/many_reads.c")], check=True)
        subprocess.run(["cc", "-O2", "-static", "-o", os.path.join(d, "many_reads.static"),
                        os.path.join(ROOT, "tests/c/many_reads.c")], check=True)
    if shutil.which("go"):
        subprocess.run(["go", "build", "-o", os.path.join(d, "many_reads.go"),
                        os.path.join(ROOT, "tests/go/many_reads.go")],
                       check=True, env=dict(os.environ, CGO_ENABLED="0"))
    if shutil.which("musl-gcc") or shutil.which("go"):
        os.mkdir(os.path.join(d, "files"))
        for i in range(MUSL_FILES):
            with open(os.path.join(d, "files", str(i)), "w") as f:
                f.write(f"{i}\n")
    os.chmod(d, 0o755)
    return d


def data_dir():
    """The data directory once made, else ""."""
    return _DATA[0] if _DATA else ""
