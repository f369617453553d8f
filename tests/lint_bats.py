#!/usr/bin/env python3
"""lint_bats.py FILE... — rejects test commands whose failure bats cannot see.

bats runs a test body under errexit, and bash ignores errexit for every command of an `a && b`
list but the last, and for a command negated with `!`. So `a && b` anywhere but on a test's last
line checks nothing when `a` fails, and `! cmd` anywhere but there checks nothing at all
(ShellCheck does not report either). Use one check per line, `run !`, or `if ...; then ...; fi`.

Flagged: a statement of a @test body, other than its last one, that holds `&&` outside quotes,
`$( )`, `[[ ]]` and the conditions of if/elif/while/until, or that starts with `!`.
Prints FILE:LINE: why for each; exit status 1 when there is any. No dependencies but python3."""
import re
import sys

CONDITION = re.compile(r'^\s*(if|elif|while|until)\b')
CONTROL = re.compile(r'^.*&&\s*(break|continue|return(\s+\d+)?)\s*$')


def strip(text):
    """text with the contents of quotes, $( ), ` `, [[ ]] and comments blanked (newlines kept)."""
    out = []
    i, n = 0, len(text)
    stack = []  # "'", '"', ')', '`', ']]'
    while i < n:
        c = text[i]
        top = stack[-1] if stack else None
        if top == "'":
            if c == "'":
                stack.pop()
            out.append('\n' if c == '\n' else ' ')
            i += 1
            continue
        if c == '\\' and i + 1 < n:
            out.append('  ' if text[i + 1] != '\n' else ' \n')
            i += 2
            continue
        if top == '"':
            if c == '"':
                stack.pop()
                out.append(' ')
            elif text.startswith('$(', i):
                stack.append(')')
                out.append('  ')
                i += 2
                continue
            else:
                out.append('\n' if c == '\n' else ' ')
            i += 1
            continue
        # unquoted (top level, or inside $( ) / ` ` / [[ ]])
        if c == '#' and (i == 0 or text[i - 1] in ' \t\n;'):
            while i < n and text[i] != '\n':
                out.append(' ')
                i += 1
            continue
        if c in '\'"':
            stack.append(c)
            out.append('Q' if not stack[:-1] else ' ')  # kept: a quoted word is a word
            i += 1
            continue
        if text.startswith('$(', i):
            stack.append(')')
            out.append('  ')
            i += 2
            continue
        if c == '`':
            if top == '`':
                stack.pop()
            else:
                stack.append('`')
            out.append(' ')
            i += 1
            continue
        if text.startswith('[[', i) and (i == 0 or text[i - 1] in ' \t\n;!(') and top != ']]':
            stack.append(']]')
            out.append('[ ')  # kept: a [[ ]] line is a statement
            i += 2
            continue
        if top == ']]' and text.startswith(']]', i):
            stack.pop()
            out.append('  ')
            i += 2
            continue
        if c == '(' and (top == ')' or (not stack and (i == 0 or text[i - 1] in ' \t\n;!('))):
            # a subshell: its status is its last command's, or the first failure of an && list
            stack.append(')')
            out.append('(' if len(stack) == 1 else ' ')
            i += 1
            continue
        if top == ')' and c == '(':
            stack.append(')')
        elif top == ')' and c == ')':
            stack.pop()
            out.append(' ')
            i += 1
            continue
        out.append(c if not stack or c == '\n' else ' ')
        i += 1
    return ''.join(out)


def heredocs_blanked(lines):
    """the lines with every here-document's body replaced by an empty line."""
    out, end = [], None
    for line in lines:
        if end is not None:
            out.append('')
            if line.strip() == end:
                end = None
            continue
        out.append(line)
        m = re.search(r"<<-?\s*(['\"]?)(\w+)\1", line)
        if m and '<<<' not in line:
            end = m.group(2)
    return out


def check(path):
    # here-documents first: their text is data, never a test or a function of the suite
    lines = heredocs_blanked(open(path, encoding='utf-8').read().split('\n'))
    problems = []
    i = 0
    while i < len(lines):
        m = re.match(r'^(@test .*|([\w-]+)\s*\(\)\s*)\{\s*$', lines[i])
        # a test, or a function of the suite (its checks are the tests'); not teardown, whose
        # `&&` lists are conditional cleanup, not checks
        if not m or (m.group(2) or '').startswith('teardown'):
            i += 1
            continue
        start = i + 1
        j = start
        while j < len(lines) and lines[j] != '}':
            j += 1
        body = lines[start:j]
        stripped = strip('\n'.join(body)).split('\n')
        # statements: (line number, text) per line and per `;`-separated part
        stmts = []
        for k in range(len(stripped) - 1, 0, -1):
            # a list continued on the next line is one statement, reported at its first line
            if re.search(r'(&&|\|\|?)\s*$', stripped[k - 1]):
                stripped[k - 1] += ' ' + stripped[k]
                stripped[k] = ''
        for k, text in enumerate(stripped):
            for part in text.split(';'):
                if part.strip() and part.strip() not in ('then', 'do', 'else', 'fi', 'done', '}'):
                    stmts.append((start + k + 1, part, body[k]))
        for idx, (lineno, text, raw) in enumerate(stmts):
            if idx == len(stmts) - 1:
                break  # the test's last command: its status is the test's
            if CONDITION.match(raw) and CONDITION.match(text):
                text = ''  # a condition's && is evaluated, not ignored
            # control flow, not a check: `cond && break` in a wait loop; and a list whose
            # failure is handled explicitly (`a && st=0 || st=$?`)
            text = CONTROL.sub('', text)
            if '||' in text:
                text = ''
            if '&&' in text:
                problems.append(f'{path}:{lineno}: `&&` before the last command: only its last '
                                'part is checked (one check per line, or if ...; then ...; fi)')
            elif re.match(r'^\s*!\s', text):
                problems.append(f'{path}:{lineno}: `!` before the last command checks nothing '
                                '(use `run !` or an if)')
        i = j + 1
    return problems


def main():
    problems = [p for path in sys.argv[1:] for p in check(path)]
    for p in problems:
        print(p)
    return 1 if problems else 0


if __name__ == '__main__':
    sys.exit(main())
