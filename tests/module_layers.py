"""module_layers.py [ROOT] — the floors of the source tree, bottom first (FLOORS below,
docs/source-layout.md), and the include rule read from the sources: a file includes its own
folder, include/ (the public API) and folders on lower floors only, and names a header of another
folder with its folder ("leaves/log.h"), so the rule is visible in the source. Prints each include
that breaks a rule and exits 1 if there is one; prints the number of includes checked last.
tests/module_calls.py applies the same floors to what the built objects reference."""
import os
import re
import sys

# Each inner list is one floor; folders on one floor may not use each other. leaves/ use nothing
# of the library; api/ holds the exported entry points, which may order a call through start/
# (the fork sequence's locks); hooks/ come last: the hooks depend on the library, never the
# reverse.
FLOORS = [
    ['preload/leaves'],
    ['preload/config'],
    ['preload/publish'],
    ['preload/context'],
    ['preload/http'],
    ['preload/messages'],
    ['preload/deferral'],
    ['preload/delivery'],
    ['preload/start'],
    ['preload/api'],
    ['hooks'],
]
TOOL_FLOORS = [
    ['tools/common'],
    ['tools/inspect', 'tools/agent'],
]
FLOOR = {d: (0, i) for i, floor in enumerate(FLOORS) for d in floor}
FLOOR.update({d: (1, i) for i, floor in enumerate(TOOL_FLOORS) for d in floor})
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def may_use(user, used):
    """Whether folder `user` may use folder `used`: itself or a lower floor of its own tree."""
    if user == used:
        return True
    a, b = FLOOR.get(user), FLOOR.get(used)
    return a is not None and b is not None and a[0] == b[0] and b[1] < a[1]


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    bad, checked = [], 0
    for top in ('preload', 'hooks', 'tools'):
        for dirpath, dirnames, filenames in os.walk(os.path.join(root, top)):
            folder = os.path.relpath(dirpath, root)
            sources = [f for f in filenames if f.endswith(('.c', '.h'))]
            if sources and folder not in FLOOR:
                bad.append(f'{folder}: a folder with sources on no floor')
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
                    elif not may_use(folder, target):
                        bad.append(f'{path}: {folder} may not include {target} ("{inc}"): '
                                   'not on a lower floor')
    for line in bad:
        print(line)
    print(f'{len(bad)} broken rule(s) in {checked} includes')
    return 1 if bad else 0


if __name__ == '__main__':
    sys.exit(main())
