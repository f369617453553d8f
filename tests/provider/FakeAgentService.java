// FakeAgentService — a small Java HTTP service; with AGENT_LIB and AGENT_SOCKET arguments it first
// loads a stand-in for the Elastic Java agent's native library (jni_agent.c), whose storage block
// names its own socket, and prints every datagram that reaches that socket.
//   java FakeAgentService [AGENT_LIB AGENT_SOCKET]
// prints "agent FD" (with the agent), then "ready PID PORT", then "agent got N bytes" per datagram.
import com.sun.net.httpserver.HttpServer;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.Executors;

class FakeAgent {
    static native int start(String socketPath);

    static native int recv(int fd, int timeoutMs);
}

public class FakeAgentService {
    public static void main(String[] args) throws Exception {
        int fd = -1;
        if (args.length == 2) {
            System.load(args[0]);
            fd = FakeAgent.start(args[1]);
            System.out.println("agent " + fd);
        }
        HttpServer server = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
        server.createContext("/", exchange -> {
            byte[] body = "ok\n".getBytes(StandardCharsets.UTF_8);
            exchange.sendResponseHeaders(200, body.length);
            exchange.getResponseBody().write(body);
            exchange.close();
        });
        server.setExecutor(Executors.newFixedThreadPool(2));
        server.start();
        System.out.println("ready " + ProcessHandle.current().pid() + " " + server.getAddress().getPort());
        if (fd >= 0) {
            final int socket = fd;
            Thread reader = new Thread(() -> {
                for (;;) {
                    int n = FakeAgent.recv(socket, 1000);
                    if (n >= 0)
                        System.out.println("agent got " + n + " bytes");
                }
            }, "fake-agent-reader");
            reader.setDaemon(true);
            reader.start();
        }
        Thread.sleep(Long.MAX_VALUE);
    }
}
