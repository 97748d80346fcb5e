// The manifests' checks (checks.cjs) on the rendered overlays: unit tier only (kubectl, no cluster).
module.exports = {
  displayName: 'deploy-kubernetes',
  preset: '../../jest.preset.js',
  rootDir: __dirname,
  testMatch: ['<rootDir>/*.spec.ts'],
  moduleFileExtensions: ['ts', 'js', 'cjs', 'json'],
};
