module.exports = {
  displayName: 'config',
  preset: '../../../jest.preset.js',
  rootDir: __dirname,
};
