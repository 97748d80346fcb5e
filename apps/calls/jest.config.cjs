module.exports = {
  displayName: 'calls',
  preset: '../../jest.preset.js',
  rootDir: __dirname,
};
