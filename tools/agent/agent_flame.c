/* agent_flame.c — see agent_flame.h. */
#include "agent_flame.h"

#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* Geometry: 12 px monospace text is about 7.2 px a character; frames are 16 px high with 1 px
 * between them; the heading takes 56 px. */
#define FRAME_H 16
#define FRAME_GAP 1
#define CHAR_W 7.2
#define PAD 10
#define HEAD_H 56
/* The three frames every folded stack starts with (agent_folded.h). */
#define LEVEL_TRACE 0
#define LEVEL_PROCESS 1
#define LEVEL_TXN 2

/* Click a frame: it and everything above it fill the width (ancestors clipped to it, frames
 * beside it hidden), names re-cut to the new widths; click the background: back. Inline, so the
 * file stays one self-contained document; without scripts the static drawing is the same. */
#define ZOOM_SCRIPT                                                                              \
    "<script><![CDATA[\n(function () {\n"                                                      \
    "var W = %d, PAD = %d, CW = %.1f, fs = document.querySelectorAll('g.f');\n"               \
    "function zoom(x0, w0) {\n"                                                               \
    "  fs.forEach(function (g) {\n"                                                           \
    "    var x = +g.dataset.x, w = +g.dataset.w, a = Math.max(x, x0), b = Math.min(x + w, x0 + w0);\n" \
    "    if (b - a < 1e-6) { g.style.display = 'none'; return; }\n"                            \
    "    g.style.display = '';\n"                                                             \
    "    var nx = PAD + (a - x0) * W / w0, nw = (b - a) * W / w0, n = g.dataset.n,\n"         \
    "        fit = Math.floor((nw - 6) / CW), t = g.querySelector('text');\n"                 \
    "    g.querySelector('rect').setAttribute('x', nx);\n"                                    \
    "    g.querySelector('rect').setAttribute('width', nw);\n"                                \
    "    t.setAttribute('x', nx + 3);\n"                                                      \
    "    t.textContent = fit < 3 ? '' : n.length <= fit ? n : n.slice(0, fit - 2) + '..';\n" \
    "  });\n}\n"                                                                             \
    "fs.forEach(function (g) {\n"                                                             \
    "  g.style.cursor = 'pointer';\n"                                                         \
    "  g.addEventListener('click', function (e) { e.stopPropagation(); zoom(+g.dataset.x, +g.dataset.w); });\n" \
    "});\n"                                                                                   \
    "document.documentElement.addEventListener('click', function () { zoom(PAD, W); });\n"   \
    "})();\n]]></script>\n"

struct line {
    char *stack;
    unsigned long count;
};

struct node {
    const char *name;
    size_t len;
    unsigned long count;
    struct node *kids;
    size_t nkids, cap;
};

static void node_free(struct node *n)
{
    for (size_t i = 0; i < n->nkids; i++)
        node_free(&n->kids[i]);
    free(n->kids);
}

static struct node *child(struct node *n, const char *name, size_t len)
{
    for (size_t i = 0; i < n->nkids; i++)
        if (n->kids[i].len == len && !memcmp(n->kids[i].name, name, len))
            return &n->kids[i];
    if (n->nkids == n->cap) {
        size_t nc = n->cap ? n->cap * 2 : 4;
        struct node *k = realloc(n->kids, nc * sizeof *k);
        if (!k)
            return NULL;
        n->kids = k;
        n->cap = nc;
    }
    struct node *k = &n->kids[n->nkids++];
    *k = (struct node){.name = name, .len = len};
    return k;
}

/* Adds one folded stack below root (whose own name is the stack's first frame). */
static int insert(struct node *root, const char *stack, unsigned long count, size_t *depth)
{
    root->count += count;
    const char *p = strchr(stack, ';');
    struct node *n = root;
    size_t d = 1;
    while (p) {
        const char *name = p + 1, *end = strchr(name, ';');
        size_t len = end ? (size_t)(end - name) : strlen(name);
        if (!(n = child(n, name, len)))
            return -1;
        n->count += count;
        p = end;
        d++;
    }
    if (d > *depth)
        *depth = d;
    return 0;
}

static void escaped(FILE *f, const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        switch (c) {
        case '&': fputs("&amp;", f); break;
        case '<': fputs("&lt;", f); break;
        case '>': fputs("&gt;", f); break;
        case '"': fputs("&quot;", f); break;
        default: fputc(c >= 0x20 && c < 0x7f ? c : '?', f); /* XML wants valid UTF-8: ASCII only */
        }
    }
}

/* A warm colour per function name (stable across graphs), distinct ones for the three levels
 * that are not functions. */
static void colour(const struct node *n, size_t level, char *out, size_t cap)
{
    if (level == LEVEL_TRACE) {
        snprintf(out, cap, "rgb(150,170,200)");
        return;
    }
    if (level == LEVEL_PROCESS) {
        snprintf(out, cap, "rgb(130,200,150)");
        return;
    }
    if (level == LEVEL_TXN) {
        snprintf(out, cap, "rgb(190,160,220)");
        return;
    }
    uint32_t h = 2166136261u; /* FNV-1a */
    for (size_t i = 0; i < n->len; i++)
        h = (h ^ (unsigned char)n->name[i]) * 16777619u;
    snprintf(out, cap, "rgb(%u,%u,%u)", 205 + h % 50, 90 + (h >> 8) % 140, 40 + (h >> 16) % 50);
}

static void draw(FILE *f, const struct node *n, size_t level, double x, double w, double total,
                 int height)
{
    if (w < AGENT_FLAME_MIN_PX)
        return;
    double y = height - PAD - (double)(level + 1) * (FRAME_H + FRAME_GAP);
    char fill[32];
    colour(n, level, fill, sizeof fill);
    /* data-x/-w/-n: where the frame was drawn and its name, for the zoom script */
    fprintf(f, "<g class=\"f\" data-x=\"%.4f\" data-w=\"%.4f\" data-n=\"", x, w);
    escaped(f, n->name, n->len);
    fputs("\"><title>", f);
    escaped(f, n->name, n->len);
    fprintf(f, " (%lu sample%s, %.1f%%)</title>", n->count, n->count == 1 ? "" : "s",
            100.0 * (double)n->count / total);
    fprintf(f, "<rect x=\"%.2f\" y=\"%.0f\" width=\"%.2f\" height=\"%d\" fill=\"%s\" rx=\"2\"/>",
            x, y, w, FRAME_H, fill);
    size_t fits = w > 6 ? (size_t)((w - 6) / CHAR_W) : 0;
    fprintf(f, "<text x=\"%.2f\" y=\"%.0f\">", x + 3, y + FRAME_H - 4);
    if (fits >= 3 && n->len <= fits) {
        escaped(f, n->name, n->len);
    } else if (fits >= 3) {
        escaped(f, n->name, fits - 2);
        fputs("..", f);
    }
    fputs("</text></g>\n", f);
    double kx = x;
    for (size_t i = 0; i < n->nkids; i++) {
        double kw = w * (double)n->kids[i].count / (double)n->count;
        draw(f, &n->kids[i], level + 1, kx, kw, total, height);
        kx += kw;
    }
}

/* Counts the distinct values of a node's level (processes, transactions) below n. */
static size_t count_at(const struct node *n, size_t level)
{
    if (level == 0)
        return 1;
    size_t c = 0;
    for (size_t i = 0; i < n->nkids; i++)
        c += count_at(&n->kids[i], level - 1);
    return c;
}

/* One graph of the lines selected (keep[i] != 0) into path; 0 or -1 with errno. */
static int render(const struct line *v, size_t n, const char *keep, const char *title,
                  const char *path, unsigned long *samples)
{
    struct node root = {0};
    size_t depth = 0;
    for (size_t i = 0; i < n; i++) {
        if (!keep[i])
            continue;
        const char *semi = strchr(v[i].stack, ';');
        root.name = v[i].stack;
        root.len = semi ? (size_t)(semi - v[i].stack) : strlen(v[i].stack);
        if (insert(&root, v[i].stack, v[i].count, &depth) != 0) {
            node_free(&root);
            errno = ENOMEM;
            return -1;
        }
    }
    FILE *f = fopen(path, "w");
    if (!f) {
        node_free(&root);
        return -1;
    }
    int height = HEAD_H + (int)depth * (FRAME_H + FRAME_GAP) + 2 * PAD;
    fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
               "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
               "viewBox=\"0 0 %d %d\" font-family=\"monospace\" font-size=\"12\">\n<title>",
            AGENT_FLAME_WIDTH, height, AGENT_FLAME_WIDTH, height);
    escaped(f, title, strlen(title));
    fprintf(f, "</title>\n<rect width=\"100%%\" height=\"100%%\" fill=\"rgb(250,250,245)\"/>\n"
               "<text x=\"%d\" y=\"24\" text-anchor=\"middle\" font-size=\"17\">",
            AGENT_FLAME_WIDTH / 2);
    escaped(f, title, strlen(title));
    size_t procs = count_at(&root, LEVEL_PROCESS), txns = count_at(&root, LEVEL_TXN);
    fprintf(f, "</text>\n<text x=\"%d\" y=\"44\" text-anchor=\"middle\" fill=\"rgb(90,90,90)\">"
               "%lu sample%s in %zu process%s, %zu transaction%s: a frame's width is its share; "
               "hover for names, click to zoom, click the background to reset</text>\n",
            AGENT_FLAME_WIDTH / 2, root.count, root.count == 1 ? "" : "s", procs,
            procs == 1 ? "" : "es", txns, txns == 1 ? "" : "s");
    draw(f, &root, LEVEL_TRACE, PAD, AGENT_FLAME_WIDTH - 2 * PAD, (double)root.count, height);
    *samples = root.count;
    fprintf(f, ZOOM_SCRIPT, AGENT_FLAME_WIDTH - 2 * PAD, PAD, CHAR_W);
    fputs("</svg>\n", f);
    node_free(&root);
    return fclose(f) == 0 ? 0 : -1;
}

/* What was written, for the listing and the index. */
struct graph {
    char path[PATH_MAX + 192], trace[64], txn[64];
    long pid; /* of the transaction's process (a transaction id is only unique within one) */
    unsigned long samples;
};

static int cmp_graph(const void *a, const void *b)
{
    const struct graph *x = a, *y = b;
    if (x->samples != y->samples)
        return x->samples < y->samples ? 1 : -1;
    return strcmp(x->path, y->path);
}

static struct graph *add_graph(struct graph **g, size_t *n, size_t *cap)
{
    if (*n == *cap) {
        size_t nc = *cap ? *cap * 2 : 16;
        struct graph *ng = realloc(*g, nc * sizeof *ng);
        if (!ng)
            return NULL;
        *g = ng;
        *cap = nc;
    }
    struct graph *e = &(*g)[(*n)++];
    memset(e, 0, sizeof *e);
    return e;
}

/* DIR/index.html: every graph, most samples first, each a link (a file:// page, no script). */
static int write_index(const char *path, const struct graph *g, size_t n)
{
    FILE *f = fopen(path, "w");
    if (!f)
        return -1;
    fprintf(f, "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>proflink flame "
               "graphs</title></head>\n<body style=\"font-family: monospace\">\n<h1>proflink "
               "flame graphs</h1>\n<p>%zu graph%s, most samples first</p>\n<ol>\n",
            n, n == 1 ? "" : "s");
    for (size_t i = 0; i < n; i++) {
        const char *file = strrchr(g[i].path, '/') + 1;
        char txn[96] = "";
        if (g[i].txn[0])
            snprintf(txn, sizeof txn, ", transaction %s (pid %ld)", g[i].txn, g[i].pid);
        fprintf(f, "<li><a href=\"%s\">trace %s%s</a>: %lu sample%s</li>\n", file, g[i].trace, txn,
                g[i].samples, g[i].samples == 1 ? "" : "s");
    }
    fputs("</ol>\n</body></html>\n", f);
    return fclose(f);
}

static int cmp_line(const void *a, const void *b)
{
    return strcmp(((const struct line *)a)->stack, ((const struct line *)b)->stack);
}

/* The folded lines of in; NULL with *n = 0 when there are none (or no memory). */
static struct line *read_lines(FILE *in, size_t *n)
{
    struct line *v = NULL;
    size_t cap = 0;
    char *buf = NULL;
    size_t bcap = 0;
    ssize_t len;
    *n = 0;
    rewind(in);
    while ((len = getline(&buf, &bcap, in)) > 0) {
        if (buf[len - 1] == '\n')
            buf[--len] = 0;
        char *sp = strrchr(buf, ' '), *end;
        if (!sp || strncmp(buf, "trace ", 6) != 0)
            continue;
        unsigned long c = strtoul(sp + 1, &end, 10);
        if (*end || !c)
            continue;
        *sp = 0;
        if (*n == cap) {
            size_t nc = cap ? cap * 2 : 64;
            struct line *nv = realloc(v, nc * sizeof *nv);
            if (!nv)
                break;
            v = nv;
            cap = nc;
        }
        if (!(v[*n].stack = strdup(buf)))
            break;
        v[(*n)++].count = c;
    }
    free(buf);
    if (*n)
        qsort(v, *n, sizeof *v, cmp_line);
    return v;
}

/* The length of a stack's first k frames (with their separators). */
static size_t prefix_len(const char *s, int k)
{
    const char *p = s;
    for (int i = 0; i < k && p; i++) {
        p = strchr(p, ';');
        if (p && i + 1 < k)
            p++;
    }
    return p ? (size_t)(p - s) : strlen(s);
}

/* The text after "<word> " of a stack's frame number k, into out. */
static void frame_word(const char *s, int k, char *out, size_t cap)
{
    size_t a = k ? prefix_len(s, k) + 1 : 0, b = prefix_len(s, k + 1);
    const char *sp = memchr(s + a, ' ', b - a);
    size_t from = sp ? (size_t)(sp - s) + 1 : a;
    snprintf(out, cap, "%.*s", (int)(b > from ? b - from : 0), s + from);
}

/* mkdir -p: the directory and its missing parents. */
static int make_dirs(const char *dir)
{
    char p[PATH_MAX];
    if (snprintf(p, sizeof p, "%s", dir) >= (int)sizeof p) {
        errno = ENAMETOOLONG;
        return -1;
    }
    for (char *s = p + 1; *s; s++) {
        if (*s != '/')
            continue;
        *s = 0;
        if (mkdir(p, 0755) != 0 && errno != EEXIST)
            return -1;
        *s = '/';
    }
    return mkdir(p, 0755) != 0 && errno != EEXIST ? -1 : 0;
}

/* The N of a stack's process frame "SERVICE (pid N)" (the service name may hold anything). */
static long frame_pid(const char *s)
{
    size_t a = prefix_len(s, LEVEL_PROCESS) + 1, b = prefix_len(s, LEVEL_PROCESS + 1);
    const char *p = s + b;
    while (p > s + a && p[-1] != '(')
        p--;
    long pid = 0;
    return p > s + a && sscanf(p, "pid %ld)", &pid) == 1 ? pid : 0;
}

int agent_flame_write(FILE *in, const char *dir, FILE *report, char *err, size_t cap)
{
    err[0] = 0;
    if (make_dirs(dir) != 0) {
        snprintf(err, cap, "cannot create %s: %s", dir, strerror(errno));
        return -1;
    }
    char abs[PATH_MAX];
    if (!realpath(dir, abs)) {
        snprintf(err, cap, "%s: %s", dir, strerror(errno));
        return -1;
    }
    size_t n, ng = 0, gcap = 0;
    struct line *v = read_lines(in, &n);
    struct graph *g = NULL, *e;
    char *keep = calloc(n + 1, 1);
    int failed = !keep;
    for (size_t i = 0; !failed && i < n;) {
        size_t tl = prefix_len(v[i].stack, 1), j = i;
        while (j < n && prefix_len(v[j].stack, 1) == tl && !strncmp(v[j].stack, v[i].stack, tl))
            j++;
        char title[256];
        if (!(e = add_graph(&g, &ng, &gcap))) {
            failed = 1;
            break;
        }
        frame_word(v[i].stack, LEVEL_TRACE, e->trace, sizeof e->trace);
        memset(keep, 0, n);
        memset(keep + i, 1, j - i);
        snprintf(e->path, sizeof e->path, "%s/trace-%s.svg", abs, e->trace);
        snprintf(title, sizeof title, "proflink flame graph: trace %s", e->trace);
        if (render(v, n, keep, title, e->path, &e->samples) != 0) {
            snprintf(err, cap, "cannot write %s: %s", e->path, strerror(errno));
            failed = 1;
            break;
        }
        /* one more per transaction when the trace has several */
        size_t ntx = 0;
        for (size_t k = i; k < j; k++) {
            size_t pk = prefix_len(v[k].stack, 3);
            int seen = 0;
            for (size_t m = i; m < k && !seen; m++)
                seen = prefix_len(v[m].stack, 3) == pk && !strncmp(v[m].stack, v[k].stack, pk);
            ntx += !seen;
        }
        for (size_t k = i; ntx > 1 && k < j; k++) {
            size_t pk = prefix_len(v[k].stack, 3);
            int seen = 0;
            for (size_t m = i; m < k && !seen; m++)
                seen = prefix_len(v[m].stack, 3) == pk && !strncmp(v[m].stack, v[k].stack, pk);
            if (seen)
                continue;
            for (size_t m = i; m < j; m++)
                keep[m] = prefix_len(v[m].stack, 3) == pk && !strncmp(v[m].stack, v[k].stack, pk);
            const char *trace = g[ng - 1].trace;
            if (!(e = add_graph(&g, &ng, &gcap))) {
                failed = 1;
                break;
            }
            snprintf(e->trace, sizeof e->trace, "%s", trace);
            frame_word(v[k].stack, LEVEL_TXN, e->txn, sizeof e->txn);
            e->pid = frame_pid(v[k].stack);
            snprintf(e->path, sizeof e->path, "%s/trace-%s-txn-%s-pid-%ld.svg", abs, e->trace,
                     e->txn, e->pid);
            snprintf(title, sizeof title, "proflink flame graph: trace %s, transaction %s (pid %ld)",
                     e->trace, e->txn, e->pid);
            if (render(v, n, keep, title, e->path, &e->samples) != 0) {
                snprintf(err, cap, "cannot write %s: %s", e->path, strerror(errno));
                failed = 1;
                break;
            }
        }
        i = j;
    }
    if (!failed && ng) {
        qsort(g, ng, sizeof *g, cmp_graph);
        for (size_t i = 0; i < ng && i < AGENT_FLAME_LISTED; i++)
        {
            char txn[96] = "";
            if (g[i].txn[0])
                snprintf(txn, sizeof txn, " transaction %s (pid %ld)", g[i].txn, g[i].pid);
            fprintf(report, "proflink-agent: flame graph of trace %s%s (%lu samples): %s\n",
                    g[i].trace, txn, g[i].samples, g[i].path);
        }
        char index[PATH_MAX + 16];
        snprintf(index, sizeof index, "%s/index.html", abs);
        if (write_index(index, g, ng) != 0) {
            snprintf(err, cap, "cannot write %s: %s", index, strerror(errno));
            failed = 1;
        } else {
            fprintf(report, "proflink-agent: %zu flame graph%s%s, all listed in %s\n", ng,
                    ng == 1 ? "" : "s", ng > AGENT_FLAME_LISTED ? " (the most sampled above)" : "",
                    index);
        }
    }
    for (size_t i = 0; i < n; i++)
        free(v[i].stack);
    free(v);
    free(keep);
    free(g);
    if (failed && !err[0])
        snprintf(err, cap, "out of memory");
    return failed ? -1 : (int)ng;
}
