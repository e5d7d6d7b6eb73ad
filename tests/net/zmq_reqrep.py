# pyzmq (Debian python3-zmq) REQ/REP and PUB/SUB over tcp://127.0.0.1.
import threading, zmq
ctx = zmq.Context()
rep = ctx.socket(zmq.REP); port = rep.bind_to_random_port("tcp://127.0.0.1")
def server():
    for _ in range(3):
        rep.send(rep.recv().upper())
t = threading.Thread(target=server); t.start()
req = ctx.socket(zmq.REQ); req.connect("tcp://127.0.0.1:%d" % port)
for w in (b"a", b"bb", b"ccc"):
    req.send(w); print("rep", req.recv())
t.join()
pub = ctx.socket(zmq.PUB); pport = pub.bind_to_random_port("tcp://127.0.0.1")
sub = ctx.socket(zmq.SUB); sub.connect("tcp://127.0.0.1:%d" % pport); sub.setsockopt(zmq.SUBSCRIBE, b"t")
import time
poller = zmq.Poller(); poller.register(sub, zmq.POLLIN)
got = None
for i in range(200):
    pub.send(b"t %d" % i)
    if poller.poll(50):
        got = sub.recv(); break
print("sub got", got is not None and got.startswith(b"t "))
ctx.destroy(linger=0)
