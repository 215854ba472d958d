// Starts `lookout demo` on a free port (its kubesim clusters on free ports too, its database
// in a fresh temporary directory) and stops it again.
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const binary = process.env.LOOKOUT_BIN ?? path.join(root, 'target/debug/lookout');

export async function startDemo(env = {}) {
  const child = spawn(binary, ['demo', '--listen', '127.0.0.1:0'], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, LOOKOUT_LOG: 'warn', ...env },
  });
  const stderr = [];
  child.stderr.on('data', (d) => stderr.push(d.toString()));
  let kubeconfig;
  const url = await new Promise((resolve, reject) => {
    const lines = createInterface({ input: child.stdout });
    lines.once('line', (line) => {
      const match = line.match(/http:\/\/[0-9.:]+/);
      match ? resolve(match[0]) : reject(new Error(`unexpected first line: ${line}`));
      // Keep reading so the demo never blocks on a full pipe; the kubeconfig's path is
      // on a later line.
      lines.on('line', (l) => {
        const k = l.match(/kubeconfig for kubectl: (\S+)/);
        if (k) kubeconfig = k[1];
      });
    });
    child.once('exit', (code) => reject(new Error(`lookout demo exited with ${code}: ${stderr.join('')}`)));
  });
  // Ready once every cluster synced or failed; the deadline is the test's timeout.
  for (;;) {
    const ok = await fetch(`${url}/readyz`).then((r) => r.ok, () => false);
    if (ok) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  return {
    url,
    /// The kubeconfig of the demo's simulated clusters (for kubectl).
    get kubeconfig() {
      return kubeconfig;
    },
    async stop() {
      if (child.exitCode !== null) return;
      const exited = new Promise((r) => child.once('exit', r));
      child.kill('SIGTERM');
      await exited;
    },
  };
}
