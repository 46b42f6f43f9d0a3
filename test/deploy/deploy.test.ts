import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseAllDocuments, parse as parseYaml } from 'yaml';

/**
 * The deployment files (SPEC §11): no Docker engine or cluster runs here, so what can be checked
 * without one is: every file parses; the image's command, its health check and the probes name
 * the service's real entry points, paths and settings; the Kubernetes objects have the fields
 * their kinds require. What is left unrun is said in the README's Operations.
 */
const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const read = (path: string) => readFileSync(join(root, path), 'utf8');

/** Every setting the service reads (src/config.ts), plus NODE_ENV. */
const SETTINGS = new Set([...read('src/config.ts').matchAll(/env\.([A-Z_]+)|env, '([A-Z_]+)'/g)].map((m) => m[1] ?? m[2]));
/** The paths the service answers without a token. */
const PROBES = ['/healthz', '/readyz'];

test('the settings the service reads are found (the checks below compare against them)', () => {
  for (const name of ['DATABASE_URL', 'DATABASE_READ_URLS', 'TOKEN_KEY', 'MIGRATE', 'WORKERS', 'SHUTDOWN_DRAIN_MS', 'NODE_ENV', 'PORT', 'HOST'])
    expect(SETTINGS).toContain(name);
  for (const path of PROBES) expect(read('src/app.ts')).toContain(`path: '${path}'`);
});

describe('Dockerfile', () => {
  const text = read('Dockerfile');
  const lines = text.split('\n').filter((l) => !l.startsWith('#'));

  test('multi-stage: the image gets production dependencies, dist/ and scripts/ only, and runs as a user that is not root', () => {
    expect(lines.filter((l) => l.startsWith('FROM ')).length).toBeGreaterThanOrEqual(2);
    expect(text).toMatch(/npm install --omit=dev/);
    const final = text.slice(text.lastIndexOf('\nFROM '));
    expect(final).toMatch(/COPY --from=deps .*node_modules/);
    expect(final).toMatch(/COPY --from=build .*\/app\/dist dist/);
    expect(final).not.toMatch(/COPY (src|test) /);
    // The npm scripts' launcher: npm run migrate, token, rotate-key and start work in the image (test/deploy/image.test.ts).
    expect(final).toMatch(/^COPY --chown=node:node scripts scripts$/m);
    expect(final).toMatch(/^USER node$/m);
  });

  test('its command is the entry point, its health check the readiness probe, its settings real ones', () => {
    const cmd = JSON.parse(/^CMD (\[.*\])$/m.exec(text)![1]) as string[];
    expect(cmd[0]).toBe('node');
    expect(cmd.at(-1)).toBe('dist/src/main.js');
    expect(existsSync(join(root, 'src/main.ts'))).toBe(true);
    expect(/^HEALTHCHECK[\s\S]*?\/readyz/m.test(text)).toBe(true);
    const env = /^ENV ([\s\S]*?)\n(?!\s)/m.exec(text)![1];
    for (const [, name] of env.matchAll(/([A-Z_]+)=/g)) expect(SETTINGS).toContain(name);
    expect(/^EXPOSE 4000$/m.test(text) && /PORT=4000/.test(env)).toBe(true);
  });

  test('its instructions keep one TOKEN_KEY in an env file made once, never a new key per run', () => {
    const comments = text
      .split('\n')
      .filter((l) => l.startsWith('#'))
      .join('\n');
    expect(comments).not.toMatch(/-e TOKEN_KEY=\$\(/);
    expect(comments).toMatch(/printf 'TOKEN_KEY=%s[^']*' "\$\(openssl rand -base64 32\)"[^\n]* > uts\.env/);
    for (const run of comments.match(/docker run .*/g)!) expect(run).toContain('--env-file uts.env');
    // The env file stays out of the build context (and of the repository).
    expect(read('.dockerignore').split('\n')).toEqual(expect.arrayContaining(['.env', '*.env']));
    expect(read('.gitignore').split('\n')).toEqual(expect.arrayContaining(['.env', '*.env']));
  });
});

describe('compose.yaml', () => {
  const compose = parseYaml(read('compose.yaml'), { merge: true }) as {
    services: Record<string, { environment?: Record<string, string>; volumes?: string[]; build?: string; image?: string; pull_policy?: string }>;
  };

  test('a primary, a replica made from it, two instances of the service and a balancer', () => {
    expect(Object.keys(compose.services).sort()).toEqual(['app1', 'app2', 'balancer', 'primary', 'replica']);
    for (const app of ['app1', 'app2']) {
      const service = compose.services[app];
      for (const name of Object.keys(service.environment!)) expect(SETTINGS).toContain(name);
      expect(service.environment!.DATABASE_READ_URLS).toContain('@replica:');
    }
    expect(read('deploy/compose/replica-start.sh')).toMatch(/pg_basebackup -h primary .* -R /);
    const haproxy = read('deploy/compose/haproxy.cfg');
    expect(haproxy).toMatch(/option httpchk GET \/readyz/);
    expect(haproxy).toMatch(/server app1 app1:4000 check/);
    for (const volume of Object.values(compose.services).flatMap((s) => s.volumes ?? [])) {
      const [source] = volume.split(':');
      if (source.startsWith('./')) expect(existsSync(join(root, source))).toBe(true);
    }
  });

  test('the image is built once and run by both instances, never pulled', () => {
    const { app1, app2 } = compose.services;
    expect(Object.values(compose.services).filter((s) => s.build !== undefined)).toEqual([app1]);
    expect(app1.build).toBe('.');
    expect(app2.image).toBe(app1.image);
    expect(app1.image).toMatch(/^user-token-service:/);
    expect([app1.pull_policy, app2.pull_policy]).toEqual(['never', 'never']);
  });

  test('TOKEN_KEY comes from .env, made once; the instructions make no new key per run', () => {
    const text = read('compose.yaml');
    expect(compose.services.app1.environment!.TOKEN_KEY).toMatch(/^\$\{TOKEN_KEY:\?[^$]*\}$/);
    expect(text).toMatch(/^# +printf 'TOKEN_KEY=%s\\n' "\$\(openssl rand -base64 32\)" > \.env +# once/m);
    expect(text).not.toMatch(/TOKEN_KEY=\$\(openssl rand -base64 32\) docker compose/);
  });
});

describe('deploy/kubernetes', () => {
  const dir = 'deploy/kubernetes';
  const objects = readdirSync(join(root, dir))
    .filter((f) => f.endsWith('.yaml') && f !== 'kustomization.yaml')
    .flatMap((file) => parseAllDocuments(read(`${dir}/${file}`)).map((doc) => ({ file, object: doc.toJS() as Record<string, any> })));
  const byKind = (kind: string) => objects.filter((o) => o.object.kind === kind).map((o) => o.object);

  test('every manifest parses, names its API and kind, and the kustomization lists them all', () => {
    const listed = (parseYaml(read(`${dir}/kustomization.yaml`)) as { resources: string[] }).resources.sort();
    expect(listed).toEqual([...new Set(objects.map((o) => o.file))].sort());
    for (const { object } of objects) {
      expect(typeof object.apiVersion).toBe('string');
      expect(typeof object.kind).toBe('string');
      expect(typeof object.metadata?.name).toBe('string');
    }
    expect(objects.map((o) => o.object.kind).sort()).toEqual(['Deployment', 'HorizontalPodAutoscaler', 'Job', 'PodDisruptionBudget', 'Secret', 'Service']);
  });

  test('the Deployment: probes on the real paths, a preStop pause and a drain, migrations left to the Job, real settings', () => {
    const [deployment] = byKind('Deployment');
    const pod = deployment.spec.template.spec;
    const [container] = pod.containers;
    expect(deployment.spec.selector.matchLabels).toEqual(deployment.spec.template.metadata.labels);
    expect(container.readinessProbe.httpGet.path).toBe('/readyz');
    expect(container.livenessProbe.httpGet.path).toBe('/healthz');
    // No probe flaps under load: each has seconds to answer (the default is 1) and readiness is lost
    // only after misses in a row.
    for (const probe of [container.readinessProbe, container.livenessProbe, container.startupProbe]) {
      expect(probe.timeoutSeconds).toBeGreaterThanOrEqual(2);
      expect(probe.timeoutSeconds).toBeLessThan(probe.periodSeconds * probe.failureThreshold);
      expect(probe.failureThreshold).toBeGreaterThanOrEqual(3);
    }
    expect(container.lifecycle.preStop.exec.command[0]).toBe('sleep');
    const env = Object.fromEntries(container.env.map((e: { name: string; value: string }) => [e.name, e.value]));
    for (const name of Object.keys(env)) expect(SETTINGS).toContain(name);
    expect(env.MIGRATE).toBe('false');
    const grace = pod.terminationGracePeriodSeconds * 1000;
    expect(grace).toBeGreaterThan(Number(env.SHUTDOWN_DRAIN_MS) + Number(env.SHUTDOWN_TIMEOUT_MS));
    expect(container.ports[0].containerPort).toBe(4000);
    expect(pod.securityContext.runAsNonRoot).toBe(true);
    const [secret] = byKind('Secret');
    for (const name of Object.keys(secret.stringData)) expect(SETTINGS).toContain(name);
    expect(container.envFrom[0].secretRef.name).toBe(secret.metadata.name);
  });

  test('one migrate Job per release: named after the image tag the kustomization gives, the package version', () => {
    const kustomization = parseYaml(read(`${dir}/kustomization.yaml`)) as { images: { name: string; newTag: string }[] };
    const [job] = byKind('Job');
    const [deployment] = byKind('Deployment');
    const [image] = kustomization.images;
    const version = (JSON.parse(read('package.json')) as { version: string }).version;
    expect(image.newTag).toBe(version);
    expect(job.metadata.name).toBe(`user-token-service-migrate-${image.newTag}`);
    // Both take their tag from the kustomization (one place per release), none its own.
    for (const container of [job.spec.template.spec.containers[0], deployment.spec.template.spec.containers[0]]) expect(container.image).toBe(image.name);
    expect(job.spec.ttlSecondsAfterFinished).toBeGreaterThan(0);
    expect(read(`${dir}/migrate-job.yaml`)).toContain(`kubectl delete job ${job.metadata.name}`);
  });

  test('the Job runs the migrations; the Service, HPA and PDB select and target the Deployment', () => {
    const [job] = byKind('Job');
    expect(job.spec.template.spec.containers[0].command).toEqual(['node', 'dist/src/cli/migrate.js']);
    expect(existsSync(join(root, 'src/cli/migrate.ts'))).toBe(true);
    const [deployment] = byKind('Deployment');
    const labels = deployment.spec.template.metadata.labels;
    const [service] = byKind('Service');
    expect(Object.entries(service.spec.selector).every(([k, v]) => labels[k] === v)).toBe(true);
    expect(service.spec.ports[0].targetPort).toBe('http');
    const [pdb] = byKind('PodDisruptionBudget');
    expect(Object.entries(pdb.spec.selector.matchLabels).every(([k, v]) => labels[k] === v)).toBe(true);
    const [hpa] = byKind('HorizontalPodAutoscaler');
    expect(hpa.spec.scaleTargetRef).toEqual({ apiVersion: 'apps/v1', kind: 'Deployment', name: deployment.metadata.name });
    expect(hpa.spec.minReplicas).toBeGreaterThanOrEqual(pdb.spec.minAvailable + 1);
  });
});
