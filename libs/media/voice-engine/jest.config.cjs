module.exports = {
  displayName: 'voice-engine',
  preset: '../../../jest.preset.js',
  rootDir: __dirname,
};
