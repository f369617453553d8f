// An unmodified JDK HttpServer with a pool of 8 threads, for the HTTP matrix
// (tests/http_matrix.py); it knows nothing of proflink. Each request `GET /work?ms=N` burns N ms
// of CPU, logged by the server itself from its own parsing of the request: "w <tid> <start ns>
// <end ns> <trace id or ->" (System.nanoTime is CLOCK_MONOTONIC) to LOG.
// java tests/http_matrix_jdk.java LOG — prints "port N" (kernel-picked, 127.0.0.1).
import com.sun.net.httpserver.HttpServer;
import java.io.FileWriter;
import java.io.OutputStream;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.net.InetSocketAddress;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.Executors;

public class http_matrix_jdk {
    public static void main(String[] args) throws Exception {
        FileWriter log = new FileWriter(args[0], true);
        ThreadMXBean mx = ManagementFactory.getThreadMXBean();
        HttpServer s = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 128);
        s.createContext("/", ex -> {
            String tp = ex.getRequestHeaders().getFirst("traceparent");
            String[] p = tp == null ? new String[0] : tp.trim().split("-");
            String trace = p.length == 4 && p[1].length() == 32 ? p[1] : "-";
            String q = ex.getRequestURI().getQuery();
            long ms = q != null && q.startsWith("ms=") ? Long.parseLong(q.substring(3)) : 0;
            ex.getRequestBody().readAllBytes();
            // the thread's id as the kernel knows it: /proc/thread-self -> PID/task/TID
            String self = Files.readSymbolicLink(Path.of("/proc/thread-self")).toString();
            String tid = self.substring(self.lastIndexOf('/') + 1);
            long start = System.nanoTime(), cpu0 = mx.getCurrentThreadCpuTime();
            long x = 0;
            while (mx.getCurrentThreadCpuTime() - cpu0 < ms * 1000000L)
                x++;
            long end = System.nanoTime();
            synchronized (log) {
                log.write("w " + tid + " " + start + " " + end + " " + trace + "\n");
                log.flush();
            }
            byte[] body = "ok".getBytes();
            ex.sendResponseHeaders(200, body.length);
            try (OutputStream o = ex.getResponseBody()) {
                o.write(body);
            }
        });
        s.setExecutor(Executors.newFixedThreadPool(8));
        s.start();
        System.out.println("port " + s.getAddress().getPort());
        System.out.flush();
    }
}
