module.exports = {
  displayName: 'carrier-twilio',
  preset: '../../../jest.preset.js',
  rootDir: __dirname,
};
