module.exports = {
  displayName: 'webhook-dispatcher',
  preset: '../../jest.preset.js',
  rootDir: __dirname,
};
