"""fuse_flush_log.py MOUNTPOINT LOG — a FUSE file system (python3-fuse) that holds its files in
memory and appends one line to LOG for every FLUSH the kernel sends ("flush /NAME"): a FLUSH
comes with every close() of a descriptor of one of its files, in any process or descriptor
table, so the log shows whether anyone but the program closed a copy of its descriptor (NFS and
FUSE write back, or block, at that moment). Runs in the foreground until unmounted."""
import errno
import stat
import sys
import time

import fuse

fuse.fuse_python_api = (0, 2)


class Stat(fuse.Stat):
    def __init__(self, mode, size=0, nlink=1):
        super().__init__()
        self.st_mode, self.st_size, self.st_nlink = mode, size, nlink
        now = int(time.time())
        self.st_atime = self.st_mtime = self.st_ctime = now


class FlushLog(fuse.Fuse):
    def __init__(self, log, *args, **kw):
        super().__init__(*args, **kw)
        self.log = log
        self.files = {}

    def note(self, line):
        with open(self.log, "a") as f:
            f.write(line + "\n")

    def getattr(self, path):
        if path == "/":
            return Stat(stat.S_IFDIR | 0o755, nlink=2)
        if path in self.files:
            return Stat(stat.S_IFREG | 0o644, len(self.files[path]))
        return -errno.ENOENT

    def readdir(self, path, offset):
        for name in [".", ".."] + [p[1:] for p in self.files]:
            yield fuse.Direntry(name)

    def create(self, path, flags, mode):
        self.files.setdefault(path, b"")

    def mknod(self, path, mode, dev):
        self.files.setdefault(path, b"")

    def open(self, path, flags):
        return 0 if path in self.files else -errno.ENOENT

    def truncate(self, path, size):
        self.files[path] = self.files.get(path, b"")[:size]

    def utimens(self, path, ts_acc, ts_mod):
        return 0

    def write(self, path, buf, offset):
        data = self.files.get(path, b"")
        self.files[path] = data[:offset] + buf + data[offset + len(buf):]
        return len(buf)

    def read(self, path, size, offset):
        return self.files.get(path, b"")[offset:offset + size]

    def unlink(self, path):
        self.files.pop(path, None)

    def flush(self, path, *unused):
        self.note("flush " + path)
        return 0

    def release(self, path, *unused):
        return 0


def main():
    mountpoint, log = sys.argv[1], sys.argv[2]
    server = FlushLog(log, version="%prog " + fuse.__version__, dash_s_do="setsingle")
    server.fuse_args.mountpoint = mountpoint
    server.fuse_args.setmod("foreground")
    server.multithreaded = False
    server.main()


if __name__ == "__main__":
    main()
