module.exports = {
  displayName: 'webhooks-service',
  preset: '../../../jest.preset.js',
  rootDir: __dirname,
};
