module.exports = {
  displayName: 'storage',
  preset: '../../../jest.preset.js',
  rootDir: __dirname,
};
