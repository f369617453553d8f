/* Native — the JNI shim (libproflink-otel-jni.so, shipped inside this jar) and whether proflink is
 * here: the preloaded library mapped into this process, active, and the only apmint provider. */
package proflink.otel;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.StandardCopyOption;
import java.util.logging.Logger;

final class Native {
  private static final Logger log = Logger.getLogger("proflink.otel");
  // The apmint profiler recognises the library by this file name (the musl build matches too).
  private static final String LIBRARY_PREFIX = "/elastic-jvmti-linux-proflink-";

  /** True when proflink is preloaded, active and this process's provider. */
  static final boolean ACTIVE = load();

  private Native() {}

  private static boolean mapped() {
    try (BufferedReader r = Files.newBufferedReader(Paths.get("/proc/self/maps"))) {
      for (String line; (line = r.readLine()) != null; ) {
        int i = line.indexOf(LIBRARY_PREFIX);
        if (i >= 0 && line.endsWith(".so")) {
          return true;
        }
      }
    } catch (IOException e) {
      return false;
    }
    return false;
  }

  private static boolean load() {
    if ("1".equals(System.getenv("PROFLINK_OTEL_DISABLE")) || !mapped()) {
      return false;
    }
    String arch = System.getProperty("os.arch", "");
    String name = "amd64".equals(arch) || "x86_64".equals(arch) ? "x86_64" : arch;
    try (InputStream in = Native.class.getResourceAsStream("/proflink/linux-" + name + "/libproflink-otel-jni.so")) {
      if (in == null) {
        log.warning("proflink-otel: no JNI shim for " + arch + " in this jar; correlation is off");
        return false;
      }
      Path tmp = Files.createTempFile("proflink-otel-jni", ".so");
      try {
        Files.copy(in, tmp, StandardCopyOption.REPLACE_EXISTING);
        System.load(tmp.toString());
      } finally {
        Files.deleteIfExists(tmp); // the mapping stays; nothing is left on disk
      }
    } catch (IOException | UnsatisfiedLinkError e) {
      log.warning("proflink-otel: JNI shim not loaded (" + e + "); correlation is off");
      return false;
    }
    int rc = init();
    if (rc == 2) {
      log.info("proflink-otel: the Elastic agent's correlation library is the provider of this "
          + "process; the extension does nothing");
    }
    return rc == 1;
  }

  private static native int init();

  /** Publishes rec (a 40-byte proflink_context) on the calling thread; null: no trace. */
  static native void setContext(byte[] rec);

  /** proflink_end_transaction in pull mode; ids: trace id (16) then transaction id (8). */
  static native int endTransaction(byte[] ids, int flags);

  static native long take(ByteBuffer direct);

  static native int transactionsFd();

  static native int waitReadable(int fd);

  static native int flush();

  static native int setResource(byte[] utf8);
}
