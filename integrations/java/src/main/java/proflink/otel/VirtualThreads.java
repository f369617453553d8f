/* VirtualThreads — follows virtual threads across carriers (Java 21+): puts Carrier on the
 * bootstrap class path, binds its native method, and adds its hooks to java.lang.VirtualThread's
 * mount() (publish the virtual thread's span on the carrier) and unmount() (clear the carrier's
 * record first), with the agent's Byte Buddy and its Instrumentation. Without them (the SDK
 * alone), or on an unknown VirtualThread, it answers false and spans on virtual threads stay
 * unpublished. */
package proflink.otel;

import java.io.ByteArrayOutputStream;
import java.io.File;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.lang.instrument.Instrumentation;
import java.util.jar.JarEntry;
import java.util.jar.JarFile;
import java.util.jar.JarOutputStream;
import java.util.logging.Logger;
import net.bytebuddy.agent.builder.AgentBuilder;
import net.bytebuddy.asm.Advice;
import net.bytebuddy.description.type.TypeDescription;
import net.bytebuddy.dynamic.DynamicType;
import net.bytebuddy.matcher.ElementMatchers;
import net.bytebuddy.utility.JavaModule;

final class VirtualThreads {
  private static final Logger log = Logger.getLogger("proflink.otel");
  private static final String CARRIER = "proflink.otel.boot.Carrier";

  private VirtualThreads() {}

  /** Adds the hooks; once java.lang.VirtualThread has them (now, or when it loads), spans on
   * virtual threads are published (PublishingStorage.followVirtual). False when they cannot be
   * added. */
  static boolean install() {
    Class<?> holder;
    try {
      holder = Class.forName("io.opentelemetry.javaagent.bootstrap.InstrumentationHolder", true, null);
    } catch (ClassNotFoundException e) {
      log.info("proflink-otel: no OpenTelemetry Java agent (the SDK alone): spans on virtual "
          + "threads are not published");
      return false;
    }
    try {
      Instrumentation inst = (Instrumentation) holder.getMethod("getInstrumentation").invoke(null);
      Class<?> vt = Class.forName("java.lang.VirtualThread", false, null);
      if (inst == null || !inst.isRetransformClassesSupported()
          || !hasHook(vt, "mount") || !hasHook(vt, "unmount")) {
        log.info("proflink-otel: virtual threads are not followed (no retransformation or an "
            + "unknown java.lang.VirtualThread); spans on them are not published");
        return false;
      }
      Class<?> carrier = bootCarrier(inst);
      if (Native.bindCarrier(carrier) != 0) {
        return false;
      }
      carrier.getMethod("enable").invoke(null);
      new AgentBuilder.Default()
          .disableClassFormatChanges()
          .with(AgentBuilder.RedefinitionStrategy.RETRANSFORMATION)
          .with(AgentBuilder.InitializationStrategy.NoOp.INSTANCE)
          .with(AgentBuilder.TypeStrategy.Default.REDEFINE)
          .ignore(ElementMatchers.none())
          .assureReadEdgeTo(inst, carrier)
          .with(new Hooked())
          .type(ElementMatchers.named("java.lang.VirtualThread"))
          .transform((builder, type, loader, module, pd) -> builder
              .visit(Advice.to(Mounted.class).on(ElementMatchers.named("mount")
                  .and(ElementMatchers.takesArguments(0))))
              .visit(Advice.to(Unmounting.class).on(ElementMatchers.named("unmount")
                  .and(ElementMatchers.takesArguments(0)))))
          .installOn(inst);
      return true;
    } catch (Throwable t) {
      log.warning("proflink-otel: virtual threads are not followed (" + t + "); spans on them "
          + "are not published");
      return false;
    }
  }

  /** Spans on virtual threads are published only once the hooks are in the class: a span put
   * on a carrier without the unmount hook would stay there. */
  private static final class Hooked extends AgentBuilder.Listener.Adapter {
    @Override
    public void onTransformation(TypeDescription type, ClassLoader loader, JavaModule module,
        boolean loaded, DynamicType dynamicType) {
      if (type.getName().equals("java.lang.VirtualThread")) {
        PublishingStorage.followVirtual = true;
      }
    }

    @Override
    public void onError(String name, ClassLoader loader, JavaModule module, boolean loaded,
        Throwable t) {
      if (name.equals("java.lang.VirtualThread")) {
        log.warning("proflink-otel: virtual threads are not followed (" + t + "); spans on them "
            + "are not published");
      }
    }
  }

  private static boolean hasHook(Class<?> vt, String name) {
    try {
      vt.getDeclaredMethod(name);
      return true;
    } catch (NoSuchMethodException e) {
      return false;
    }
  }

  /** Carrier from the bootstrap loader: its class file in a jar of its own on the boot class
   * path (the jar is deleted once the class is loaded, the only one it holds). */
  private static Class<?> bootCarrier(Instrumentation inst) throws Exception {
    String entry = CARRIER.replace('.', '/') + ".class";
    byte[] bytes;
    try (InputStream in = VirtualThreads.class.getResourceAsStream("/" + entry)) {
      if (in == null) {
        throw new IOException("no " + entry + " in the extension");
      }
      ByteArrayOutputStream b = new ByteArrayOutputStream();
      byte[] buf = new byte[4096];
      for (int n; (n = in.read(buf)) > 0; ) {
        b.write(buf, 0, n);
      }
      bytes = b.toByteArray();
    }
    File jar = File.createTempFile("proflink-otel-boot", ".jar");
    try {
      try (JarOutputStream out = new JarOutputStream(new FileOutputStream(jar))) {
        out.putNextEntry(new JarEntry(entry));
        out.write(bytes);
        out.closeEntry();
      }
      inst.appendToBootstrapClassLoaderSearch(new JarFile(jar));
      Class<?> c = Class.forName(CARRIER, true, null);
      if (c.getClassLoader() != null) {
        throw new IllegalStateException(CARRIER + " is not the bootstrap loader's");
      }
      return c;
    } finally {
      jar.delete();
    }
  }

  /** Inlined at the end of VirtualThread.mount(): the virtual thread's span onto its carrier. */
  static final class Mounted {
    @Advice.OnMethodExit
    static void exit() {
      proflink.otel.boot.Carrier.mounted();
    }
  }

  /** Inlined at the start of VirtualThread.unmount(): nothing left on the carrier. */
  static final class Unmounting {
    @Advice.OnMethodEnter
    static void enter() {
      proflink.otel.boot.Carrier.unmounting();
    }
  }
}
