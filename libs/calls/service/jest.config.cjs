module.exports = {
  displayName: 'calls-service',
  preset: '../../../jest.preset.js',
  rootDir: __dirname,
};
