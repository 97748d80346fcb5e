import { createServer, Server } from 'node:http';
import { AddressInfo } from 'node:net';
import { HealthRegistry } from './health';
import { collectMetrics, metricsRegistry } from './metrics';

/**
 * Liveness (/healthz), readiness (/readyz) and Prometheus metrics (/metrics) for a service that has no public
 * HTTP port of its own (every service but the gateway, in distributed mode).
 */
export async function startOpsServer(port: number, health: HealthRegistry): Promise<Server> {
  const server = createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    const reply = (status: number, type: string, body: string) => {
      res.writeHead(status, { 'content-type': type });
      res.end(body);
    };
    if (path === '/healthz') return reply(200, 'application/json', '{"status":"ok"}');
    if (path === '/readyz') {
      return void health.readiness().then((r) => reply(r.ready ? 200 : 503, 'application/json', JSON.stringify(r)));
    }
    if (path === '/metrics') {
      return void collectMetrics().then((m) => reply(200, metricsRegistry.contentType, m));
    }
    reply(404, 'application/json', '{"status":404}');
  });
  await new Promise<void>((resolve) => server.listen(port, resolve));
  return server;
}

export function boundPort(server: Server): number {
  return (server.address() as AddressInfo).port;
}
