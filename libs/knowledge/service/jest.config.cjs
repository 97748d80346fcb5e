module.exports = {
  displayName: 'knowledge-service',
  preset: '../../../jest.preset.js',
  rootDir: __dirname,
};
