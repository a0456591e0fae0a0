#!/usr/bin/env python3
"""samebytes: runs two pepa binaries over the same commands and compares
every byte they print (stdout, stderr, exit code) and every file they write.

    python3 internal/testing/samebytes/samebytes.py BEFORE AFTER [REPO]

The commands: every sh block of the README (go test lines left out) and
every --help example of every verb, in order, in a copy of the repository
(the same path for both binaries, so paths printed are the same), with
stand-ins for sbatch and parallel (those of cmd/pepa/examples_test.go);
then every testdata model through states, steady, robustness --beta 45
and passage --target-action A --at 10,20 (A: the first action of its
steady-state throughputs), each as text and as --format json; states,
steady, passage and robustness with --max-states 200000 (a model past it
fails the same way under both); every command with a time limit (120 s).
Both binaries run on the same sources: HEAD of REPO, exported once. What
is masked before comparing: the numbers of the lines that report the machine (MACHINE: stage times, speed,
the memory budget, optimize's elapsed time, a server's timestamps and
port); the order of a parallel make's lines; the files SKIP_FILES names
(the binary copied into out/, a server's state); optimize runs stopped by
--budget compare their exit code only. The report says which commands
differed and how.
"""
import json, os, re, shutil, subprocess, sys, difflib

BEFORE, AFTER = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
REPO = os.path.abspath(sys.argv[3] if len(sys.argv) > 3 else '.')
WORK = '/tmp/samebytes-run'
ROOT = os.path.join(WORK, 'repo')
NUMBER = re.compile(r'\d+(\.\d+)?(e[-+]?\d+)?')
# Lines that report the machine rather than the model: how long stages
# took, the speed, the memory budget (what the machine has free at the
# time), optimize's elapsed time, a server's timestamps and port. Their
# numbers are masked.
MACHINE = ('stages:', 'events/s', 'memory budget', 'chains:', 'stopped: optimal', 'stopped: budget',
           'loaded ', 'listening on', 'stopping:', ' stopped\n')
# Files that differ by nature: the binary itself (copied or built into an
# out/ directory), a server's state (random ids, times) and token.
SKIP_FILES = re.compile(r'(^|/)out/pepa$|^serve-state/|^serve\.(log|token)$')

def stand_ins():
    src = open(os.path.join(REPO, 'cmd/pepa/examples_test.go')).read()
    out = {}
    for name, body in re.findall(r'"(sbatch|parallel)": `(.*?)`', src, re.S):
        out[name] = body
    return out

def snapshot():
    """The sources both binaries run on: HEAD of REPO, exported once."""
    global REPO
    src = WORK + '-src'
    if os.path.exists(src):
        shutil.rmtree(src)
    os.makedirs(src)
    subprocess.run('git -C %s archive HEAD | tar -x -C %s' % (REPO, src), shell=True, check=True)
    REPO = src

def copy_repo():
    if os.path.exists(WORK):
        shutil.rmtree(WORK)
    def ignore(d, names):
        rel = os.path.relpath(d, REPO)
        return [n for n in names if (n.startswith('.') and n != '.ci') or (rel == '.' and n == 'out')]
    shutil.copytree(REPO, ROOT, ignore=ignore, symlinks=True)

def env_for(binary):
    b = os.path.join(WORK, 'bin')
    os.makedirs(b, exist_ok=True)
    shutil.copy(binary, os.path.join(b, 'pepa'))
    for n, s in stand_ins().items():
        p = os.path.join(b, n)
        open(p, 'w').write(s)
        os.chmod(p, 0o755)
    e = dict(os.environ)
    e['PATH'] = b + os.pathsep + e['PATH']
    return e

def run(cmd, env, timeout=120):
    try:
        p = subprocess.run(['sh', '-e', '-c', cmd], cwd=ROOT, env=env, capture_output=True, timeout=timeout)
        return (p.returncode, p.stdout, p.stderr)
    except subprocess.TimeoutExpired:
        return ('timeout', b'', b'')

def readme_blocks():
    blocks, cur, inside = [], [], False
    for line in open(os.path.join(REPO, 'README.md')).read().split('\n'):
        if not inside and line.strip() == '```sh':
            inside, cur = True, []
        elif inside and line.strip() == '```':
            inside = False
            s = '\n'.join(l for l in cur if not l.strip().startswith('go test')).strip()
            if s:
                blocks.append(s)
        elif inside:
            cur.append(line)
    return blocks

def help_examples(env):
    out = []
    verbs = re.findall(r'^  (\w+)  ', subprocess.run(['pepa', 'help'], env=env, capture_output=True, text=True).stdout, re.M)
    for v in verbs:
        h = subprocess.run(['pepa', v, '--help'], env=env, capture_output=True, text=True)
        text = h.stdout + h.stderr
        inside = False
        for line in text.split('\n'):
            if line.startswith('Examples'):
                inside = True
                continue
            t = line.strip()
            if inside and t.startswith('pepa '):
                out.append(re.split(r'\s{2,}', t, 1)[0])
    return out

def models():
    ms = []
    for d, _, fs in os.walk(os.path.join(REPO, 'testdata')):
        for f in fs:
            if f.endswith('.pepa'):
                ms.append(os.path.relpath(os.path.join(d, f), REPO))
    return sorted(ms)

def first_action(env, m, extra):
    try:
        p = subprocess.run(['pepa', 'steady', '--format', 'json'] + extra + [m], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
        doc = json.loads(p.stdout)
    except Exception:
        return None
    for k in ('throughputs', 'throughput', 'actions'):
        v = doc.get(k)
        if isinstance(v, list) and v and isinstance(v[0], dict):
            return v[0].get('action') or v[0].get('name')
        if isinstance(v, dict) and v:
            return sorted(v)[0]
    return None

def commands(env):
    cmds = [('readme %d' % i, b) for i, b in enumerate(readme_blocks())]
    cmds += [('help: ' + e, e) for e in help_examples(env)]
    for m in models():
        extra = ['--max-states', '200000']
        x = ' '.join(extra)
        q = "'" + m + "'"
        for fmt in ('', ' --format json'):
            cmds.append(('states' + fmt + ' ' + m, 'pepa states %s%s %s' % (x, fmt, q)))
            cmds.append(('steady' + fmt + ' ' + m, 'pepa steady %s%s %s' % (x, fmt, q)))
            cmds.append(('robustness' + fmt + ' ' + m, 'pepa robustness --beta 45 %s%s %s' % (x, fmt, q)))
        a = first_action(env, m, extra)
        if a:
            for fmt in ('', ' --format json'):
                cmds.append(('passage' + fmt + ' ' + m, "pepa passage --target-action '%s' --at 10,20 %s%s %s" % (a, x, fmt, q)))
    return cmds

def mask(b, cmd=''):
    lines = b.decode('utf-8', 'replace').split('\n')
    lines = [NUMBER.sub('<n>', l) if any(k.strip('\n') in l for k in MACHINE) else l for l in lines]
    if 'make ' in cmd and ' -j' in cmd:
        lines.sort()  # parallel make: the order of its jobs is the scheduler's
    return '\n'.join(lines)

def tree():
    out = {}
    for d, _, fs in os.walk(ROOT):
        for f in fs:
            p = os.path.join(d, f)
            if os.path.islink(p):
                continue
            rel = os.path.relpath(p, ROOT)
            if not SKIP_FILES.search(rel):
                out[rel] = open(p, 'rb').read()
    return out

def side(binary, cmds=None):
    copy_repo()
    env = env_for(binary)
    if cmds is None:
        cmds = commands(env)
        if os.environ.get('ONLY'):
            # ONLY=optimize: the commands whose name or text contain it.
            cmds = [(n, c) for n, c in cmds if os.environ['ONLY'] in n or os.environ['ONLY'] in c]
    res = []
    for k, (name, c) in enumerate(cmds):
        print('%s %d/%d %s' % (os.path.basename(binary), k + 1, len(cmds), name), file=sys.stderr, flush=True)
        code, o, e = run(c, env)
        res.append((name, c, code, mask(o, c), mask(e, c)))
    return cmds, res, tree()

def main():
    snapshot()
    cmds, before, tb = side(BEFORE)
    _, after, ta = side(AFTER, cmds)
    diffs = 0
    for (name, c, c1, o1, e1), (_, _, c2, o2, e2) in zip(before, after):
        if '--budget' in c and 'optimize' in c:
            # A search stopped by wall-clock time: what it reaches depends on
            # the machine's speed at the time; only the exit code is compared.
            if c1 != c2:
                diffs += 1
                print('DIFFERS (exit): %s' % name)
            else:
                print('TIME-BUDGETED (exit code compared only): %s' % name)
            continue
        if (c1, o1, e1) != (c2, o2, e2):
            diffs += 1
            print('DIFFERS: %s\n  $ %s\n  exit %s vs %s' % (name, c, c1, c2))
            for label, x, y in (('stdout', o1, o2), ('stderr', e1, e2)):
                if x != y:
                    for l in list(difflib.unified_diff(x.split('\n'), y.split('\n'), 'before', 'after', lineterm='', n=1))[:20]:
                        print('    ' + label + ' ' + l)
    for f in sorted(set(tb) | set(ta)):
        if tb.get(f) != ta.get(f):
            diffs += 1
            print('FILE DIFFERS: %s' % f)
    print('%d commands, %d files compared; %d differences' % (len(cmds), len(set(tb) | set(ta)), diffs))
    sys.exit(1 if diffs else 0)

main()
