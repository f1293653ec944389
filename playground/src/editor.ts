import { defaultKeymap, history, historyKeymap, indentWithTab } from '@codemirror/commands';
import { javascript, javascriptLanguage } from '@codemirror/lang-javascript';
import { bracketMatching, defaultHighlightStyle, syntaxHighlighting } from '@codemirror/language';
import { EditorState, StateEffect, StateField } from '@codemirror/state';
import { Decoration, EditorView, highlightActiveLine, keymap, lineNumbers, type DecorationSet } from '@codemirror/view';

/** Marks the line of an error in the editor. */
const setErrorLine = StateEffect.define<number | null>();
const errorLine = StateField.define<DecorationSet>({
  create: () => Decoration.none,
  update(marks, tr) {
    let next = marks.map(tr.changes);
    for (const effect of tr.effects) {
      if (!effect.is(setErrorLine)) continue;
      next = Decoration.none;
      const line = effect.value;
      if (line !== null && line >= 1 && line <= tr.state.doc.lines) {
        next = Decoration.set([Decoration.line({ class: 'cm-error-line' }).range(tr.state.doc.line(line).from)]);
      }
    }
    return tr.docChanged ? Decoration.none : next;
  },
  provide: (field) => EditorView.decorations.from(field),
});

export interface CodeEditor {
  readonly view: EditorView;
  getCode(): string;
  setCode(code: string): void;
  /** Highlights a (1-based) line, or clears with null. */
  markError(line: number | null): void;
}

/** A CodeMirror 6 editor for JavaScript with line numbers, history and an error-line marker. */
export function createEditor(parent: HTMLElement, code: string, onChange: () => void): CodeEditor {
  const view = new EditorView({
    parent,
    state: EditorState.create({
      doc: code,
      extensions: [
        lineNumbers(),
        history(),
        bracketMatching(),
        highlightActiveLine(),
        javascript(),
        syntaxHighlighting(defaultHighlightStyle),
        keymap.of([...defaultKeymap, ...historyKeymap, indentWithTab]),
        errorLine,
        EditorView.updateListener.of((update) => {
          if (update.docChanged) onChange();
        }),
      ],
    }),
  });
  return {
    view,
    getCode: () => view.state.doc.toString(),
    setCode: (next) => view.dispatch({ changes: { from: 0, to: view.state.doc.length, insert: next } }),
    markError: (line) => view.dispatch({ effects: setErrorLine.of(line) }),
  };
}

/** The first syntax error's line and column (1-based) by the editor's own JavaScript parser, for messages. */
export function syntaxErrorPosition(code: string): { line: number; column: number } | undefined {
  let at: number | undefined;
  javascriptLanguage.parser.parse(code).iterate({
    enter(node) {
      if (at === undefined && node.type.isError) at = node.from;
      return at === undefined;
    },
  });
  if (at === undefined) return undefined;
  const before = code.slice(0, at).split('\n');
  return { line: before.length, column: before[before.length - 1]!.length + 1 };
}
