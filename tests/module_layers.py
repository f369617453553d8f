"""module_layers.py [ROOT] — the layer rules of the source tree, read from the includes: which
folder may include which (LAYERS below, docs/source-layout.md), and that a header of
another folder is named with its folder ("leaves/log.h"), so the rule is visible in the source.
Prints each include that breaks a rule and exits 1 if there is one; prints the number of
includes checked last."""
import os
import re
import sys

# What each folder may include besides its own files and include/ (the public API). A folder not
# listed may include nothing else. The library never includes hooks/: the hooks depend on the
# library, never the reverse. leaves/ use nothing of the library. start/ orders everything at
# start-up, fork, exec and exit, so it may use every layer.
LIBRARY = ['preload/' + d for d in
           ('start', 'config', 'context', 'publish', 'messages', 'deferral', 'http', 'leaves')]
LAYERS = {
    'preload/leaves': [],
    'preload/config': ['preload/leaves', 'preload/context', 'preload/publish'],
    'preload/publish': ['preload/leaves', 'preload/config', 'preload/context', 'preload/start'],
    'preload/http': ['preload/leaves', 'preload/context', 'preload/messages', 'preload/start'],
    'preload/deferral': ['preload/leaves', 'preload/context', 'preload/messages', 'preload/start'],
    'preload/messages': ['preload/leaves', 'preload/context', 'preload/deferral', 'preload/start'],
    'preload/context': ['preload/leaves', 'preload/config', 'preload/http', 'preload/messages',
                        'preload/publish', 'preload/start'],
    'preload/start': [d for d in LIBRARY if d != 'preload/start'],
    'hooks': LIBRARY,
    'tools/target': [],
    'tools/inspect': ['tools/target'],
    'tools/agent': ['tools/target'],
}
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    bad, checked = [], 0
    for top in ('preload', 'hooks', 'tools'):
        for dirpath, dirnames, filenames in os.walk(os.path.join(root, top)):
            folder = os.path.relpath(dirpath, root)
            sources = [f for f in filenames if f.endswith(('.c', '.h'))]
            if sources and folder not in LAYERS:
                bad.append(f'{folder}: a folder with sources that no layer rule names')
                continue
            # a path in an include is relative to the -I root of its tree (preload/ or tools/)
            base = 'tools' if top == 'tools' else 'preload'
            for name in sorted(sources):
                path = os.path.join(folder, name)
                with open(os.path.join(root, path)) as f:
                    text = f.read()
                for inc in INCLUDE.findall(text):
                    checked += 1
                    if '/' not in inc:
                        if os.path.exists(os.path.join(root, folder, inc)) or \
                                os.path.exists(os.path.join(root, 'include', inc)):
                            continue
                        bad.append(f'{path}: "{inc}" is of another folder: name it with its folder')
                        continue
                    target = os.path.dirname(os.path.normpath(os.path.join(base, inc)))
                    if not os.path.exists(os.path.join(root, base, inc)):
                        bad.append(f'{path}: "{inc}" names no file under {base}/')
                    elif target != folder and target not in LAYERS[folder]:
                        bad.append(f'{path}: {folder} may not include {target} ("{inc}")')
    for line in bad:
        print(line)
    print(f'{len(bad)} broken rule(s) in {checked} includes')
    return 1 if bad else 0


if __name__ == '__main__':
    sys.exit(main())
