/* PublishingStorage — wraps the agent's ContextStorage: every attach publishes the attached
 * context's span on the calling thread, and closing its scope publishes the context that is
 * current again (the one before the attach). */
package proflink.otel;

import io.opentelemetry.context.Context;
import io.opentelemetry.context.ContextStorage;
import io.opentelemetry.context.Scope;

final class PublishingStorage implements ContextStorage {
  private final ContextStorage delegate;

  PublishingStorage(ContextStorage delegate) {
    this.delegate = delegate;
  }

  @Override
  public Scope attach(Context toAttach) {
    Scope scope = delegate.attach(toAttach);
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
