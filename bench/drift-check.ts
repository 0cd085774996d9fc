/**
 * One shallow drift check in a process of its own (run by bench/drift.ts), so that its memory and CPU are
 * the checker's alone: `node bench/drift-check.ts <kubeconfig>` prints one JSON line.
 */
import { checkDrift } from '../lib/drift/check.ts';
import { clientsFromKubeconfigFile } from '../lib/kube/clients.ts';
import { localContext } from '../lib/local/context.ts';

const kubeconfig = process.argv[2];
if (!kubeconfig) throw new Error('usage: node bench/drift-check.ts <kubeconfig>');
const clients = clientsFromKubeconfigFile(kubeconfig);
const rssBefore = process.memoryUsage().rss;
const cpu = process.cpuUsage();
const report = await checkDrift(localContext({ clients }), {
  clusterId: 'bench',
  provider: 'aws',
  expect: 'in-tree',
  deep: false,
});
const used = process.cpuUsage(cpu);
process.stdout.write(
  `${JSON.stringify({
    status: report.status,
    error: report.error,
    apiRequests: report.apiRequests,
    cpuSeconds: (used.user + used.system) / 1e6,
    rssMb: process.memoryUsage().rss / 2 ** 20,
    rssBeforeMb: rssBefore / 2 ** 20,
  })}\n`,
);
