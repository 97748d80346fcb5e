module.exports = {
  displayName: 'standalone',
  preset: '../../jest.preset.js',
  rootDir: __dirname,
};
