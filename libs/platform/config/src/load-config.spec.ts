// The apps load reflect-metadata first (main.ts); implicit number conversion needs its design:type metadata.
import 'reflect-metadata';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { getMetadataStorage } from 'class-validator';
import { ConfigError, loadConfig } from './load-config';
import { GatewayConfig, MEDIA_HEARTBEAT_SECONDS, ServiceConfig, StandaloneConfig } from './platform-config';

const VALID_KEY = 'vsk_local_owner_key_0001';

function configError(env: NodeJS.ProcessEnv): ConfigError {
  try {
    loadConfig(GatewayConfig, env);
  } catch (error) {
    if (error instanceof ConfigError) return error;
    throw error;
  }
  throw new Error('expected a ConfigError');
}

describe('loadConfig', () => {
  it('refuses OPS_PORT for the standalone platform, with the other problems, and takes what a gateway takes', () => {
    expect(() => loadConfig(StandaloneConfig, { OPS_PORT: '9100', PORT: 'x' })).toThrow(
      expect.objectContaining({
        problems: expect.arrayContaining([expect.stringContaining('OPS_PORT is for a distributed service'), expect.stringMatching(/^PORT: /)]),
      }),
    );
    expect(loadConfig(StandaloneConfig, { PORT: '18555' })).toMatchObject({ PORT: 18555, OPS_PORT: undefined });
    expect(loadConfig(GatewayConfig, { OPS_PORT: '9100' }).OPS_PORT).toBe(9100);
  });

  it('applies every default when the environment is empty', () => {
    const config = loadConfig(GatewayConfig, {});

    expect(config).toBeInstanceOf(GatewayConfig);
    expect(config).toMatchObject({
      PORT: 8080,
      HOST: '0.0.0.0',
      BOOTSTRAP_KEYS: '',
      BODY_LIMIT_BYTES: 1048576,
      DATA_DIR: './.data',
      EMBEDDED_PG_PORT: 54329,
      AGENTS_GRPC_URL: '127.0.0.1:50051',
      CALLS_GRPC_URL: '127.0.0.1:50052',
      MEDIA_GRPC_URL: '127.0.0.1:50053',
      WEBHOOKS_GRPC_URL: '127.0.0.1:50054',
      RPC_TIMEOUT_MS: 5000,
      SHUTDOWN_GRACE_MS: 10000,
      LOG_LEVEL: 'info',
    });
    expect(config.DATABASE_URL).toBeUndefined();
    expect(config.NATS_URL).toBeUndefined();
    expect(config.SECRET_KEY).toBeUndefined();
    expect(config.OPS_PORT).toBeUndefined();
    expect(config.GRPC_BIND).toBeUndefined();
    expect(config.MEDIA_GRPC_ADVERTISE_URL).toBeUndefined();
  });

  it('converts numeric environment strings to numbers', () => {
    const config = loadConfig(GatewayConfig, {
      PORT: '18555',
      BODY_LIMIT_BYTES: '2048',
      EMBEDDED_PG_PORT: '55000',
      OPS_PORT: '9100',
      RPC_TIMEOUT_MS: '250',
      SHUTDOWN_GRACE_MS: '0',
    });

    expect(config.PORT).toBe(18555);
    expect(config.BODY_LIMIT_BYTES).toBe(2048);
    expect(config.EMBEDDED_PG_PORT).toBe(55000);
    expect(config.OPS_PORT).toBe(9100);
    expect(config.RPC_TIMEOUT_MS).toBe(250);
    expect(config.SHUTDOWN_GRACE_MS).toBe(0);
  });

  it('keeps given string values and accepts valid optional ones', () => {
    const config = loadConfig(GatewayConfig, {
      HOST: '127.0.0.1',
      DATABASE_URL: 'postgresql://u:p@db:5432/parley',
      NATS_URL: 'nats://a:4222,nats://b:4222',
      BOOTSTRAP_KEYS: `acme:owner:${VALID_KEY}`,
      SECRET_KEY: 'x'.repeat(32),
      GRPC_BIND: '0.0.0.0:50051',
      MEDIA_GRPC_ADVERTISE_URL: '10.0.3.7:50053',
      LOG_LEVEL: 'silent',
    });

    expect(config).toMatchObject({
      HOST: '127.0.0.1',
      DATABASE_URL: 'postgresql://u:p@db:5432/parley',
      NATS_URL: 'nats://a:4222,nats://b:4222',
      BOOTSTRAP_KEYS: `acme:owner:${VALID_KEY}`,
      SECRET_KEY: 'x'.repeat(32),
      GRPC_BIND: '0.0.0.0:50051',
      MEDIA_GRPC_ADVERTISE_URL: '10.0.3.7:50053',
      LOG_LEVEL: 'silent',
    });
  });

  it('treats an empty variable as unset, so the default applies', () => {
    const config = loadConfig(GatewayConfig, { PORT: '', DATABASE_URL: '' });

    expect(config.PORT).toBe(8080);
    expect(config.DATABASE_URL).toBeUndefined();
  });

  it('ignores environment variables it does not declare', () => {
    const config = loadConfig(GatewayConfig, { PATH: '/usr/bin', HOME: '/root' }) as unknown as Record<string, unknown>;

    expect(config['PATH']).toBeUndefined();
    expect(config['HOME']).toBeUndefined();
  });

  it('reports every problem at once when several values are bad', () => {
    const error = configError({ PORT: 'abc', DATABASE_URL: 'mysql://x', BOOTSTRAP_KEYS: 'bad' });

    expect(error.name).toBe('ConfigError');
    const byVariable = (name: string) => error.problems.filter((p) => p.startsWith(`${name}: `));
    expect(byVariable('PORT').length).toBeGreaterThan(0);
    expect(byVariable('DATABASE_URL')).toEqual(['DATABASE_URL: DATABASE_URL must be a postgres:// URL']);
    expect(byVariable('BOOTSTRAP_KEYS')).toEqual(['BOOTSTRAP_KEYS: entry 1 must be account:role:key']);
    expect(error.problems.every((p) => /^(PORT|DATABASE_URL|BOOTSTRAP_KEYS): /.test(p))).toBe(true);
    // The message an operator sees lists them all, one per line.
    for (const problem of error.problems) expect(error.message).toContain(`  - ${problem}`);
  });

  it('refuses out-of-range and malformed values with the variable named', () => {
    const error = configError({
      PORT: '70000',
      EMBEDDED_PG_PORT: '80',
      RPC_TIMEOUT_MS: '1.5',
      LOG_LEVEL: 'loud',
      NATS_URL: 'http://nats:4222',
      AGENTS_GRPC_URL: 'agents',
      MEDIA_GRPC_ADVERTISE_URL: 'http://10.0.3.7:50053',
      SECRET_KEY: 'short',
    });

    const variables = new Set(error.problems.map((p) => p.split(':')[0]));
    expect([...variables].sort()).toEqual(
      ['AGENTS_GRPC_URL', 'EMBEDDED_PG_PORT', 'LOG_LEVEL', 'MEDIA_GRPC_ADVERTISE_URL', 'NATS_URL', 'PORT', 'RPC_TIMEOUT_MS', 'SECRET_KEY'].sort(),
    );
  });

  it('refuses a CALL_STUCK_SECONDS under three media heartbeats, so a quiet healthy call is never reaped between two', () => {
    expect(MEDIA_HEARTBEAT_SECONDS).toBe(10);
    for (const tooShort of ['10', '29']) {
      expect(configError({ CALL_STUCK_SECONDS: tooShort }).problems).toEqual(['CALL_STUCK_SECONDS: CALL_STUCK_SECONDS must not be less than 30']);
    }
    expect(loadConfig(ServiceConfig, { CALL_STUCK_SECONDS: '30' }).CALL_STUCK_SECONDS).toBe(30);
  });

  it('runs Silero as the VAD unless told energy, and refuses any other VAD', () => {
    expect(loadConfig(ServiceConfig, {}).VAD).toBe('silero');
    expect(loadConfig(ServiceConfig, { VAD: 'energy' }).VAD).toBe('energy');
    expect(configError({ VAD: 'webrtc' }).problems).toEqual(['VAD: VAD must be silero or energy']);
  });

  it('allows webhook http to no host by default, and takes only bare hosts and addresses in WEBHOOK_ALLOW_HTTP_HOSTS', () => {
    expect(loadConfig(GatewayConfig, {}).WEBHOOK_ALLOW_HTTP_HOSTS).toBe('');
    expect(loadConfig(GatewayConfig, { WEBHOOK_ALLOW_HTTP_HOSTS: '127.0.0.1, [::1],dev.local' }).WEBHOOK_ALLOW_HTTP_HOSTS).toBe('127.0.0.1, [::1],dev.local');
    const error = configError({ WEBHOOK_ALLOW_HTTP_HOSTS: 'http://127.0.0.1,127.0.0.1:8080,10.0.0.0/8' });
    expect(error.problems.filter((p) => p.startsWith('WEBHOOK_ALLOW_HTTP_HOSTS: '))).toEqual([
      'WEBHOOK_ALLOW_HTTP_HOSTS: entry 1 ("http://127.0.0.1") is not a host name or IP address (give only the host: no scheme, port or range); ' +
        'entry 2 ("127.0.0.1:8080") is not a host name or IP address (give only the host: no scheme, port or range); ' +
        'entry 3 ("10.0.0.0/8") is not a host name or IP address (give only the host: no scheme, port or range)',
    ]);
  });

  it('leaves embeddings off by default, and bounds the query embedding timeout', () => {
    const config = loadConfig(GatewayConfig, {});
    expect(config).toMatchObject({ EMBEDDINGS_MODEL: '', EMBEDDINGS_QUERY_TIMEOUT_MS: 120 });
    expect(config.EMBEDDINGS_BASE_URL).toBeUndefined();
    expect(config.EMBEDDINGS_API_KEY).toBeUndefined();
    expect(loadConfig(GatewayConfig, { EMBEDDINGS_MODEL: ' text-embedding-3-small ', EMBEDDINGS_QUERY_TIMEOUT_MS: '300' })).toMatchObject({
      EMBEDDINGS_MODEL: 'text-embedding-3-small',
      EMBEDDINGS_QUERY_TIMEOUT_MS: 300,
    });
    const error = configError({ EMBEDDINGS_QUERY_TIMEOUT_MS: '10', EMBEDDINGS_BASE_URL: 'ftp://x' });
    expect(new Set(error.problems.map((p) => p.split(':')[0]))).toEqual(new Set(['EMBEDDINGS_QUERY_TIMEOUT_MS', 'EMBEDDINGS_BASE_URL']));
  });

  it('reads process.env when no environment is passed', () => {
    const saved = process.env['PORT'];
    process.env['PORT'] = '18556';
    try {
      expect(loadConfig(GatewayConfig).PORT).toBe(18556);
    } finally {
      if (saved === undefined) delete process.env['PORT'];
      else process.env['PORT'] = saved;
    }
  });

  it('validates a service config without the gateway-only settings', () => {
    const config = loadConfig(ServiceConfig, { PORT: 'abc', BOOTSTRAP_KEYS: 'bad' }) as unknown as Record<string, unknown>;

    expect(config['PORT']).toBeUndefined();
    expect(config['BOOTSTRAP_KEYS']).toBeUndefined();
  });
});

describe('README configuration table', () => {
  function declaredVariables(): string[] {
    const validated = getMetadataStorage()
      .getTargetValidationMetadatas(GatewayConfig, '', true, false)
      .map((m) => m.propertyName);
    return [...new Set([...validated, ...Object.keys(new GatewayConfig())])].sort();
  }

  function documentedVariables(): string[] {
    const readme = readFileSync(join(__dirname, '..', '..', '..', '..', 'README.md'), 'utf8');
    const section = readme.split(/^## Configuration\s*$/m)[1]?.split(/^## /m)[0];
    if (!section) throw new Error('README.md has no "## Configuration" section');
    return section
      .split('\n')
      .filter((line) => line.startsWith('|'))
      .map((line) => line.split('|')[1].trim())
      .map((cell) => /^`([A-Z0-9_]+)`$/.exec(cell)?.[1])
      .filter((name): name is string => name !== undefined);
  }

  it('lists exactly the environment variables GatewayConfig declares', () => {
    const documented = documentedVariables();

    const declared = declaredVariables();

    expect(declared.length).toBeGreaterThan(0);
    expect({
      missingFromReadme: declared.filter((name) => !documented.includes(name)),
      notDeclaredByGatewayConfig: documented.filter((name) => !declared.includes(name)),
      listedTwice: documented.filter((name, i) => documented.indexOf(name) !== i),
    }).toEqual({ missingFromReadme: [], notDeclaredByGatewayConfig: [], listedTwice: [] });
  });
});
