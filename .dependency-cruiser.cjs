// weir's floors, bottom up. A module may import from its own floor and the floors below it, never from above, and no
// import circle is allowed anywhere. This list is the one place the floors are written down (README's "Developing
// weir" draws it); `npm test` runs `depcruise` against it.
const floors = [
  ['core'], // contracts: types, elements, errors, key groups, the graph description
  ['state'], // descriptors, serializers, TTL and every state backend
  ['storage'], // every checkpoint storage
  ['task'], // what runs inside one task: source runner, barrier alignment, watermark valve, snapshot writer
  ['time', 'operators', 'windows', 'sources', 'sinks'], // the operators a pipeline is built from
  ['checkpoint'], // the coordinator side of checkpoints
  ['stateProcessor', 'inspector'], // reading and writing checkpoints and savepoints at rest
  ['query'], // queryable state: live and from checkpoints
  ['runtime'], // job, running job, execution attempt, restart strategy, restore selection
  ['node', 'browser', 'testing'], // entry points and platform glue
];

const folder = (names) => `^src/(${names.join('|')})/`;

const upward = floors.slice(0, -1).map((names, i) => ({
  name: `floor-${names.join('-')}`,
  comment: `${names.join(', ')} may not import from a higher floor (${floors.slice(i + 1).flat().join(', ')})`,
  severity: 'error',
  from: { path: folder(names) },
  to: { path: folder(floors.slice(i + 1).flat()) },
}));

module.exports = {
  forbidden: [
    {
      name: 'no-circular',
      comment: 'an import circle makes two modules one: split out what both need',
      severity: 'error',
      from: { path: '^src/' },
      to: { circular: true },
    },
    {
      name: 'entry-points-on-top',
      comment: 'src/index.ts only wires and exports: only the other entry points may re-export it',
      severity: 'error',
      from: { path: '^src/.+/', pathNot: '^src/(node|browser|testing)/index\\.ts$' },
      to: { path: '^src/index\\.ts$' },
    },
    ...upward,
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
  },
};
