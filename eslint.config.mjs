import nx from '@nx/eslint-plugin';

// Module boundaries are the architecture: contracts import nothing, platform libraries only contracts and each
// other, a service's feature code only its own scope plus shared libraries, and the voice engine (scope:media)
// never reaches into the control plane (agents, calls, gateway, webhooks); the browser client imports the contracts only.
export default [
  ...nx.configs['flat/base'],
  ...nx.configs['flat/typescript'],
  ...nx.configs['flat/javascript'],
  { ignores: ['**/dist', '**/node_modules', '**/.nx', 'libs/contracts/src/gen/**'] },
  {
    files: ['**/*.ts', '**/*.js', '**/*.mjs', '**/*.cts'],
    rules: {
      '@nx/enforce-module-boundaries': [
        'error',
        {
          enforceBuildableLibDependency: true,
          allow: ['^.*/eslint(\\.base)?\\.config\\.[cm]?[jt]s$'],
          depConstraints: [
            { sourceTag: 'type:contracts', onlyDependOnLibsWithTags: [] },
            { sourceTag: 'type:platform', onlyDependOnLibsWithTags: ['type:contracts', 'type:platform'] },
            { sourceTag: 'type:testing', onlyDependOnLibsWithTags: ['type:contracts', 'type:platform'] },
            {
              sourceTag: 'type:feature',
              onlyDependOnLibsWithTags: [
                'type:contracts',
                'type:platform',
                'type:feature',
                'type:engine',
                'type:testing',
                'type:provider',
                'type:domain',
              ],
            },
            { sourceTag: 'scope:gateway', onlyDependOnLibsWithTags: ['scope:gateway', 'scope:shared'] },
            { sourceTag: 'scope:agents', onlyDependOnLibsWithTags: ['scope:agents', 'scope:knowledge', 'scope:shared'] },
            { sourceTag: 'scope:knowledge', onlyDependOnLibsWithTags: ['scope:knowledge', 'scope:shared'] },
            { sourceTag: 'scope:calls', onlyDependOnLibsWithTags: ['scope:calls', 'scope:workflows', 'scope:shared'] },
            { sourceTag: 'scope:workflows', onlyDependOnLibsWithTags: ['scope:workflows', 'scope:shared'] },
            { sourceTag: 'scope:media', onlyDependOnLibsWithTags: ['scope:media', 'scope:shared'] },
            { sourceTag: 'scope:webhooks', onlyDependOnLibsWithTags: ['scope:webhooks', 'scope:shared'] },
            { sourceTag: 'type:app', onlyDependOnLibsWithTags: ['type:feature', 'type:platform', 'type:contracts'] },
            {
              sourceTag: 'type:e2e',
              onlyDependOnLibsWithTags: ['type:testing', 'type:contracts', 'type:platform', 'type:provider'],
            },
            { sourceTag: 'scope:platform', onlyDependOnLibsWithTags: ['*'] },
            {
              sourceTag: 'type:engine',
              onlyDependOnLibsWithTags: ['type:contracts', 'type:engine', 'type:platform', 'type:provider', 'type:domain'],
            },
            { sourceTag: 'type:provider', onlyDependOnLibsWithTags: ['type:contracts', 'type:provider'] },
            {
              sourceTag: 'type:domain',
              onlyDependOnLibsWithTags: ['type:contracts', 'type:provider', 'type:domain', 'type:platform'],
            },
            // Shared domain logic (post-call analysis) stays free of platform libraries; a service's domain library
            // (knowledge ingestion: documents to text and chunks) may use platform utilities such as the egress guard.
            { allSourceTags: ['type:domain', 'scope:shared'], onlyDependOnLibsWithTags: ['type:contracts', 'type:provider', 'type:domain'] },
            // The browser client runs in people's browsers: the wire contracts only. No tag above lists
            // type:client, so no service, app or platform library may import it (the gateway serves its build).
            { sourceTag: 'type:client', onlyDependOnLibsWithTags: ['type:contracts'] },
            { sourceTag: 'scope:client', onlyDependOnLibsWithTags: ['scope:shared'] },
          ],
        },
      ],
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      // Explicit types on initialised properties are what emit decorator metadata (config classes need it).
      '@typescript-eslint/no-inferrable-types': 'off',
    },
  },
];
