// A JDK HttpServer that knows nothing of proflink or OpenTelemetry, for tests/java.bats: run under
// the OpenTelemetry Java agent (which traces its requests) with or without the extension and the
// library. `GET /work?ms=N` burns N ms of CPU, logged from the service's own reading of the
// request's traceparent: "w <tid> <start ns> <end ns> <trace id or ->" (System.nanoTime is
// CLOCK_MONOTONIC) to LOG, the HTTP matrix's format (tests/http_matrix.py). A virtual thread burns
// in slices of 2 ms with a park between them, so that virtual threads move between carriers.
// java JavaService.java LOG pool|virtual — prints "port N" (kernel-picked, 127.0.0.1).
import com.sun.net.httpserver.HttpServer;
import java.io.FileWriter;
import java.io.OutputStream;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.net.InetSocketAddress;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;

public class JavaService {
    static ThreadMXBean mx = ManagementFactory.getThreadMXBean();
    static volatile long sink;

    static long spin(long x) {
        for (int j = 0; j < 20000; j++)
            x = x * 31 + j;
        return x;
    }

    static String tid() throws Exception {
        // the thread's id as the kernel knows it: /proc/thread-self -> PID/task/TID (a virtual
        // thread's carrier)
        String self = Files.readSymbolicLink(Path.of("/proc/thread-self")).toString();
        return self.substring(self.lastIndexOf('/') + 1);
    }

    public static void main(String[] args) throws Exception {
        FileWriter log = new FileWriter(args[0], true);
        boolean virtual = args.length > 1 && args[1].equals("virtual");
        HttpServer s = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 128);
        s.createContext("/", ex -> {
            try {
                String tp = ex.getRequestHeaders().getFirst("traceparent");
                String[] p = tp == null ? new String[0] : tp.trim().split("-");
                String trace = p.length == 4 && p[1].length() == 32 ? p[1] : "-";
                String q = ex.getRequestURI().getQuery();
                long ms = q != null && q.startsWith("ms=") ? Long.parseLong(q.substring(3)) : 0;
                ex.getRequestBody().readAllBytes();
                // a virtual thread burns in slices with a yield between them: other virtual
                // threads then run on this carrier, and this one may come back on another
                long left = ms * 1000000L, slice = virtual ? 2000000L : left;
                while (left > 0) {
                    long n = Math.min(slice, left);
                    String t = tid();
                    long start = System.nanoTime(), cpu0 = mx.getCurrentThreadCpuTime();
                    long x = 0;
                    // (a virtual thread has no CPU time of its own: -1; it stays on CPU anyway)
                    // arithmetic between clock reads: a profiler's samples land in Java code, not
                    // in the clock's vDSO call (which it cannot unwind)
                    if (virtual)
                        while (System.nanoTime() - start < n)
                            x = spin(x);
                    else
                        while (mx.getCurrentThreadCpuTime() - cpu0 < n)
                            x = spin(x);
                    sink = x;
                    long end = System.nanoTime();
                    synchronized (log) {
                        log.write("w " + t + " " + start + " " + end + " " + trace + "\n");
                        log.flush();
                    }
                    left -= n;
                    if (left > 0)
                        Thread.sleep(0, 1000);
                }
                byte[] body = "ok".getBytes();
                ex.sendResponseHeaders(200, body.length);
                try (OutputStream o = ex.getResponseBody()) {
                    o.write(body);
                }
            } catch (Exception e) {
                throw new RuntimeException(e);
            }
        });
        ExecutorService pool = virtual ? (ExecutorService) Executors.class
                .getMethod("newVirtualThreadPerTaskExecutor").invoke(null)
                : Executors.newFixedThreadPool(8);
        s.setExecutor(pool);
        s.start();
        System.out.println("port " + s.getAddress().getPort());
        System.out.flush();
    }
}
