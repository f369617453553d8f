/* PublishingStorage — wraps the agent's ContextStorage: every attach publishes the attached
 * context's span on the calling thread, and closing its scope publishes the context that is
 * current again (the one before the attach).
 *
 * On a virtual thread (Java 21+) the span goes through Carrier, which keeps it with the virtual
 * thread and moves it on and off the carrier (the OS thread the profiler reads) at each mount
 * and unmount. Where those hooks could not be added (VirtualThreads), nothing is published on a
 * virtual thread: a span left on a carrier would stay there while other virtual threads run on
 * it, so their samples are attributed to no trace rather than to a wrong one. */
package proflink.otel;

import io.opentelemetry.context.Context;
import io.opentelemetry.context.ContextStorage;
import io.opentelemetry.context.Scope;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;

final class PublishingStorage implements ContextStorage {
  private final ContextStorage delegate;
  // Thread.isVirtual() where the JVM has it (the jar is built for Java 8)
  private static final MethodHandle IS_VIRTUAL = isVirtualHandle();

  private static MethodHandle isVirtualHandle() {
    try {
      return MethodHandles.publicLookup()
          .findVirtual(Thread.class, "isVirtual", MethodType.methodType(boolean.class));
    } catch (ReflectiveOperationException e) {
      return null;
    }
  }

  static boolean onVirtualThread() {
    if (IS_VIRTUAL == null) {
      return false;
    }
    try {
      return (boolean) IS_VIRTUAL.invokeExact(Thread.currentThread());
    } catch (Throwable t) {
      return false;
    }
  }

  /** Whether spans on virtual threads are published: java.lang.VirtualThread has the hooks. */
  static volatile boolean followVirtual;

  /** Publishes rec on the current thread: false when it is a virtual thread not followed. */
  private static boolean publish(byte[] rec) {
    if (!onVirtualThread()) {
      Native.setContext(rec);
      return true;
    }
    if (!followVirtual) {
      return false;
    }
    proflink.otel.boot.Carrier.publish(rec);
    return true;
  }

  PublishingStorage(ContextStorage delegate) {
    this.delegate = delegate;
  }

  @Override
  public Scope attach(Context toAttach) {
    Scope scope = delegate.attach(toAttach);
    if (!publish(SpanRecords.of(toAttach))) {
      return scope;
    }
    return new Restore(scope, delegate);
  }

  @Override
  public Context current() {
    return delegate.current();
  }

  @Override
  public Context root() {
    return delegate.root();
  }

  private static final class Restore implements Scope {
    private final Scope scope;
    private final ContextStorage storage;

    Restore(Scope scope, ContextStorage storage) {
      this.scope = scope;
      this.storage = storage;
    }

    @Override
    public void close() {
      scope.close();
      publish(SpanRecords.of(storage.current()));
    }
  }
}
