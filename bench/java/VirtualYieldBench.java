// VirtualYieldBench — what a virtual thread's unmount + mount costs: 4 virtual threads each call
// Thread.yield() 500k times (each yield unmounts the thread and mounts it again, on the default
// scheduler), timed per yield; prints "yield_ns N", the best of 5 rounds after 2 of warm-up.
// bench/java/run.sh runs it under the OpenTelemetry Java agent alone and with proflink's
// extension (whose hooks add one JNI call to each mount and to each unmount), proflink
// preloaded both ways. Java 21+.
public final class VirtualYieldBench {
    static final int THREADS = 4, YIELDS = 500_000;

    static long round() throws Exception {
        Thread[] ts = new Thread[THREADS];
        long t0 = System.nanoTime();
        for (int i = 0; i < THREADS; i++)
            ts[i] = Thread.ofVirtual().start(() -> {
                for (int j = 0; j < YIELDS; j++)
                    Thread.yield();
            });
        for (Thread t : ts)
            t.join();
        return System.nanoTime() - t0;
    }

    public static void main(String[] args) throws Exception {
        long best = Long.MAX_VALUE;
        for (int r = 0; r < 7; r++) {
            long t = round();
            if (r >= 2)
                best = Math.min(best, t);
        }
        System.out.printf("yield_ns %.1f%n", (double) best / ((long) THREADS * YIELDS));
    }
}
