/* Carrier — the span record of each virtual thread, moved onto its carrier (the OS thread whose
 * record the profiler reads) when it mounts and taken off before it unmounts. The hooks are
 * called from java.lang.VirtualThread's mount() and unmount() (VirtualThreads adds them), so
 * this class is loaded by the bootstrap loader; its native method is bound by the JNI shim
 * (RegisterNatives), which is loaded by the extension's own loader. */
package proflink.otel.boot;

public final class Carrier {
  // set once the native method is bound: before, the hooks do nothing
  private static volatile boolean on;
  // the record the virtual thread published last (null: no trace)
  private static final ThreadLocal<byte[]> RECORD = new ThreadLocal<byte[]>();

  private Carrier() {}

  public static void enable() {
    on = true;
  }

  /** On a mounted virtual thread: rec is its span from now on, published on its carrier. */
  public static void publish(byte[] rec) {
    RECORD.set(rec);
    set(rec);
  }

  /** At the end of VirtualThread.mount(): the current thread is the virtual thread. */
  public static void mounted() {
    if (on) {
      set(RECORD.get());
    }
  }

  /** At the start of VirtualThread.unmount(): still the virtual thread, on its carrier. */
  public static void unmounting() {
    if (on) {
      set(null);
    }
  }

  /** proflink_set_context on the calling OS thread (the carrier); null: no trace. */
  private static native void set(byte[] rec);
}
