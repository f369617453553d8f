"""module_calls.py OBJDIR [--map | --who-calls SYMBOL | --hooked] — the call graph between the library's modules (one object per
preload/*/*.c and hooks/*.c under OBJDIR), read from the objects' symbol tables: module A depends
on B when A references a symbol B defines, weak references included (a weak reference is a call
whenever the linker finds the symbol). Symbols the C library also defines (the hooks interpose
close, read, syscall...) are libc's, not a module's. Prints each reference that runs up the
floors of tests/module_layers.py and each cycle (strongly connected set of modules), and exits 1
if there is one; --map prints every module's edges;
--who-calls prints only the modules that reference SYMBOL, one per line; --hooked prints each
library module and the symbol it references that a hook defines (its call reaches the hook)."""
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from module_layers import may_use  # noqa: E402 (the one definition of the floors)


def symbols(path, *flags):
    out = subprocess.run(['nm', *flags, path], capture_output=True, text=True, check=True).stdout
    return [line.split() for line in out.splitlines() if line.strip()]


def main():
    objdir = sys.argv[1]
    libc = subprocess.run(['gcc', '-print-file-name=libc.so.6'], capture_output=True,
                          text=True, check=True).stdout.strip()
    libc_names = {f[-1].split('@')[0] for f in symbols(os.path.realpath(libc), '-D', '--defined-only')}
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    defs, refs = {}, {}
    # the library's layers (preload/<layer>/) and the hooks: every folder that holds sources
    subs = ['hooks'] + sorted('preload/' + d for d in os.listdir(os.path.join(root, 'preload'))
                              if os.path.isdir(os.path.join(root, 'preload', d)))
    for sub in subs:
        if not os.path.isdir(os.path.join(objdir, sub)):
            continue
        for name in sorted(os.listdir(os.path.join(objdir, sub))):
            # an object whose source is gone (an old build directory) is no module any more
            if name.endswith('.o') and os.path.exists(os.path.join(root, sub, name[:-2] + '.c')):
                mod = sub + '/' + name[:-2]
                syms = symbols(os.path.join(objdir, sub, name))
                defs[mod] = {f[2] for f in syms if len(f) == 3 and f[1] in 'TDBRVW'}
                refs[mod] = {f[1] for f in syms if len(f) == 2 and f[0] in 'Uwv'}
    if '--who-calls' in sys.argv:
        symbol = sys.argv[sys.argv.index('--who-calls') + 1]
        for m in sorted(refs):
            if symbol in refs[m]:
                print(m)
        return 0
    if '--hooked' in sys.argv:
        # libc names the hooks define (close, read...): a library module that calls one by name
        # runs proflink's own interposer, not libc's
        hooked = {s for m, ds in defs.items() if m.startswith('hooks/') for s in ds}
        for m in sorted(refs):
            if not m.startswith('hooks/'):
                for s in sorted(refs[m] & hooked):
                    print(m, s)
        return 0
    owner = {s: m for m, ds in defs.items() for s in ds if s not in libc_names}
    edges = {m: sorted({owner[s] for s in refs[m] if s in owner and owner[s] != m}) for m in defs}
    if '--map' in sys.argv:
        for m in sorted(edges):
            print(m, '->', ' '.join(edges[m]) or '(nothing)')
    # a reference to a module of a higher floor (or of another folder on the same floor)
    ups = [(m, w) for m in sorted(edges) for w in edges[m]
           if not may_use(os.path.dirname(m), os.path.dirname(w))]
    for m, w in ups:
        print('up:', m, '->', w)
    # Tarjan's strongly connected components
    index, low, stack, on_stack, cycles = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in edges[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                cycles.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in sorted(edges):
        if v not in index:
            visit(v)
    for comp in cycles:
        print('cycle:', ' '.join(comp))
        for m in comp:
            print('   ', m, '->', ' '.join(w for w in edges[m] if w in comp))
    print(len(ups), 'reference(s) up,', len(cycles), 'cycle(s) among', len(edges), 'modules')
    return 1 if cycles or ups else 0


sys.exit(main())
