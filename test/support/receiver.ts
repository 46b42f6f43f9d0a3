import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { Webhook } from 'standardwebhooks';
import { waitFor } from './processes.js';

/**
 * A webhook receiver for the tests: a real `node:http` server on loopback that checks every
 * delivery with `standardwebhooks`' `Webhook.verify` against the secrets it is given (as a receiver
 * would), records each in the order it came, and answers what the test asks for: 2xx by default,
 * a status, a redirect, or no answer at all (hang) for the next requests.
 */
export interface Delivery {
  /** webhook-id: the audit event's id. */
  id: string;
  headers: Record<string, string>;
  body: string;
  json: { type: string; timestamp: string; data: Record<string, unknown> & { id: number } };
  /** Which of the secrets given verified it (their indexes); empty when none did. */
  verifiedBy: number[];
  /** The webhook the delivery was for (the path: /hook/<name>). */
  path: string;
}

export type Answer = { status: number; body?: string; headers?: Record<string, string> } | 'hang';

export interface Receiver {
  /** A URL of this receiver; `name` tells the webhooks posting to it apart. */
  url(name: string): string;
  deliveries: Delivery[];
  /** Of one path. */
  of(name: string): Delivery[];
  /** Secrets to verify with, per path (verification tries each). */
  secrets: Map<string, string[]>;
  /** Answers for the next requests to a path, in order; once used up, `fallback`. */
  script(name: string, ...answers: Answer[]): void;
  fallback: Answer;
  /** Requests answered so far, per path (hung ones included once they came). */
  received(name: string): number;
  /** Requests being held without an answer. */
  hanging: ServerResponse[];
  /** Stops listening (connections refused) until `restart()`, on the same port. */
  down(): Promise<void>;
  restart(): Promise<void>;
  /** Waits until `count` deliveries to `name` have come. */
  waitFor(name: string, count: number, ms?: number): Promise<Delivery[]>;
  close(): Promise<void>;
}

export async function startReceiver(): Promise<Receiver> {
  const deliveries: Delivery[] = [];
  const scripts = new Map<string, Answer[]>();
  const secrets = new Map<string, string[]>();
  const sockets = new Set<Socket>();
  const hanging: ServerResponse[] = [];
  const receiver: Receiver = {
    url: () => '',
    deliveries,
    of: (name) => deliveries.filter((d) => d.path === `/hook/${name}`),
    secrets,
    script: (name, ...answers) => scripts.set(`/hook/${name}`, [...(scripts.get(`/hook/${name}`) ?? []), ...answers]),
    fallback: { status: 204 },
    received: (name) => deliveries.filter((d) => d.path === `/hook/${name}`).length,
    hanging,
    async waitFor(name, count, ms = 30_000) {
      await waitFor(`${count} deliveries to ${name} (have ${receiver.received(name)})`, () => receiver.received(name) >= count, ms);
      return receiver.of(name);
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const res of hanging) res.destroy();
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
    down: () => receiver.close(),
    restart: () => new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve)),
  };
  let port = 0;
  const server: Server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      const path = req.url ?? '/';
      const headers = Object.fromEntries(Object.entries(req.headers).map(([k, v]) => [k, String(v)]));
      const verifiedBy: number[] = [];
      (secrets.get(path.replace('/hook/', '')) ?? []).forEach((secret, i) => {
        try {
          new Webhook(secret).verify(body, headers);
          verifiedBy.push(i);
        } catch {
          // not this one
        }
      });
      let json: Delivery['json'];
      try {
        json = JSON.parse(body);
      } catch {
        json = { type: '', timestamp: '', data: { id: 0 } };
      }
      deliveries.push({ id: headers['webhook-id'], headers, body, json, verifiedBy, path });
      const answer = scripts.get(path)?.shift() ?? receiver.fallback;
      if (answer === 'hang') {
        hanging.push(res);
        return;
      }
      res.writeHead(answer.status, { 'content-type': 'text/plain', ...answer.headers });
      res.end(answer.body ?? '');
    });
  });
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  port = (server.address() as AddressInfo).port;
  receiver.url = (name) => `http://127.0.0.1:${port}/hook/${name}`;
  return receiver;
}
