/* PublishingStorage — wraps the agent's ContextStorage: every attach publishes the attached
 * context's span on the calling thread, and closing its scope publishes the context that is
 * current again (the one before the attach).
 *
 * Not on a virtual thread (Java 21+): it runs on a carrier thread, whose record the profiler
 * reads, and leaves it at any blocking call without the extension knowing (docs/api.md); a span
 * published there would stay on the carrier while other virtual threads run on it. Their samples
 * are then attributed to no trace rather than to a wrong one. */
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

  PublishingStorage(ContextStorage delegate) {
    this.delegate = delegate;
  }

  @Override
  public Scope attach(Context toAttach) {
    Scope scope = delegate.attach(toAttach);
    if (onVirtualThread()) {
      return scope;
    }
    Native.setContext(SpanRecords.of(toAttach));
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
      Native.setContext(SpanRecords.of(storage.current()));
    }
  }
}
