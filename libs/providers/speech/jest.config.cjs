module.exports = {
  displayName: 'speech',
  preset: '../../../jest.preset.js',
  rootDir: __dirname,
};
