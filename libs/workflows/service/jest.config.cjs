module.exports = {
  displayName: 'workflows-service',
  preset: '../../../jest.preset.js',
  rootDir: __dirname,
};
