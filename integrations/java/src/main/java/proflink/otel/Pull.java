/* Pull — proflink's one pull queue of ended transactions (proflink_take_transactions), shared by
 * every DeferringExporter of the process. A daemon thread waits on proflink_transactions_fd, takes
 * the results and exports the spans they complete; proflink's reader thread never runs Java. */
package proflink.otel;

import io.opentelemetry.api.common.AttributeKey;
import io.opentelemetry.api.common.Attributes;
import io.opentelemetry.sdk.trace.data.DelegatingSpanData;
import io.opentelemetry.sdk.trace.data.SpanData;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Base64;
import java.util.Collections;
import java.util.HashMap;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.locks.ReentrantLock;

final class Pull {
  static final AttributeKey<List<String>> STACK_TRACE_IDS =
      AttributeKey.stringArrayKey("elastic.profiler_stack_trace_ids");
  // Each id is repeated `count` times (the spec's counted keyword). Beyond this many values per
  // span the attribute would only cost memory and export size, so it is cut.
  static final int MAX_VALUES = 1 << 16;
  private static final int HEADER = 32;
  private static final int ENTRY = 20;

  private static final class Held {
    final SpanData span;
    final DeferringExporter exporter;

    Held(SpanData span, DeferringExporter exporter) {
      this.span = span;
      this.exporter = exporter;
    }
  }

  // trace id + transaction id (hex) -> the spans waiting for that result
  private static final Map<String, ArrayDeque<Held>> held = new HashMap<>();
  private static final ReentrantLock drainLock = new ReentrantLock();
  private static ByteBuffer buf = ByteBuffer.allocateDirect(64 * 1024).order(ByteOrder.nativeOrder());
  private static int state; // 0 not started, 1 watching, -1 unusable

  private Pull() {}

  /** Starts the pull thread once. True when results can be pulled. */
  static synchronized boolean watch() {
    if (state == 0) {
      int fd = Native.transactionsFd();
      if (fd < 0) {
        state = -1;
      } else {
        Thread t = new Thread(() -> loop(fd), "proflink-otel-pull");
        t.setDaemon(true);
        t.start();
        state = 1;
      }
    }
    return state == 1;
  }

  private static void loop(int fd) {
    while (true) {
      Native.waitReadable(fd);
      drain(true);
    }
  }

  static void hold(String key, SpanData span, DeferringExporter exporter) {
    synchronized (held) {
      held.computeIfAbsent(key, k -> new ArrayDeque<>(1)).add(new Held(span, exporter));
    }
  }

  static void unhold(String key, SpanData span) {
    synchronized (held) {
      ArrayDeque<Held> q = held.get(key);
      if (q != null) {
        q.removeIf(h -> h.span == span);
        if (q.isEmpty()) {
          held.remove(key);
        }
      }
    }
  }

  /** Delivers every held transaction now (flush, shutdown). */
  static void deliverHeld() {
    boolean any;
    synchronized (held) {
      any = !held.isEmpty();
    }
    if (any) {
      Native.flush();
      drain(true);
    }
  }

  /** Takes every queued result and exports the spans they complete. wait=false: not when another
   * thread is draining (it takes until the queue is empty, this call's results included). */
  static void drain(boolean wait) {
    if (wait) {
      drainLock.lock();
    } else if (!drainLock.tryLock()) {
      return;
    }
    try {
      while (true) {
        long n = Native.take(buf);
        if (n < 0) { // the first result alone is larger: take it with a buffer that fits
          buf = ByteBuffer.allocateDirect((int) -n).order(ByteOrder.nativeOrder());
          continue;
        }
        if (n == 0) {
          return;
        }
        forward(buf, (int) n);
      }
    } finally {
      drainLock.unlock();
    }
  }

  private static void forward(ByteBuffer b, int n) {
    Map<DeferringExporter, List<SpanData>> out = new IdentityHashMap<>();
    byte[] trace = new byte[16];
    byte[] tx = new byte[8];
    byte[] sid = new byte[16];
    Base64.Encoder b64 = Base64.getUrlEncoder().withoutPadding();
    int off = 0;
    while (off + HEADER <= n) {
      b.position(off);
      b.get(trace).get(tx);
      int nIds = b.getInt(off + 24);
      off += HEADER;
      List<String> ids = new ArrayList<>();
      for (int i = 0; i < nIds; i++, off += ENTRY) {
        b.position(off);
        b.get(sid);
        long count = b.getInt(off + 16) & 0xffffffffL;
        String id = b64.encodeToString(sid);
        long room = MAX_VALUES - ids.size();
        ids.addAll(Collections.nCopies((int) Math.min(count, room), id));
      }
      Held h;
      synchronized (held) {
        String key = hex(trace) + hex(tx);
        ArrayDeque<Held> q = held.get(key);
        h = q == null ? null : q.poll();
        if (q != null && q.isEmpty()) {
          held.remove(key);
        }
      }
      if (h != null) {
        out.computeIfAbsent(h.exporter, e -> new ArrayList<>())
            .add(ids.isEmpty() ? h.span : withIds(h.span, ids));
      }
    }
    for (Map.Entry<DeferringExporter, List<SpanData>> e : out.entrySet()) {
      e.getKey().forward(e.getValue());
    }
  }

  private static SpanData withIds(SpanData span, List<String> ids) {
    Attributes attrs = span.getAttributes().toBuilder().put(STACK_TRACE_IDS, ids).build();
    return new DelegatingSpanData(span) {
      @Override
      public Attributes getAttributes() {
        return attrs;
      }

      @Override
      public int getTotalAttributeCount() {
        return span.getTotalAttributeCount() + 1;
      }
    };
  }

  private static final char[] HEX = "0123456789abcdef".toCharArray();

  private static String hex(byte[] b) {
    char[] c = new char[b.length * 2];
    for (int i = 0; i < b.length; i++) {
      c[2 * i] = HEX[(b[i] >> 4) & 15];
      c[2 * i + 1] = HEX[b[i] & 15];
    }
    return new String(c);
  }

}
