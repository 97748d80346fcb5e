module.exports = {
  displayName: 'agents-service',
  preset: '../../../jest.preset.js',
  rootDir: __dirname,
};
