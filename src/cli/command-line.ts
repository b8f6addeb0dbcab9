/**
 * Reading a command line: help, the version, or a command of COMMANDS with
 * its option values; a UsageError, with a suggestion where one is close,
 * for anything else.
 */
import { parseArgs } from 'node:util';
import { VERSION } from '../base/version.ts';
import { COMMANDS, GROUPS, groupCommands, UsageError, type CommandSpec, type Run, type Values } from './commands.ts';
import { alternatives, commandHelp, groupHelp, USAGE } from './help.ts';
import { didYouMean, nearest } from '../base/suggestions.ts';

const HELP = ['--help', '-h', 'help'];
const VERSION_FLAGS = ['--version', '-v', 'version'];
const HELP_OPTIONS = ['--help', '-h'];

/** The text to print for help or the version, or the command to run. */
export function parseCommandLine(argv: readonly string[]): string | Run {
  const [first, ...rest] = argv;
  if (first === undefined) throw new UsageError('no command given');
  if (HELP.includes(first)) return helpFor(rest);
  if (VERSION_FLAGS.includes(first)) {
    if (rest.length > 0) throw new UsageError(`${first} takes no arguments, got ${JSON.stringify(rest.join(' '))}`);
    return `${VERSION}\n`;
  }
  const command = COMMANDS.find((c) => c.words.every((word, i) => argv[i] === word));
  if (command !== undefined) {
    const args = argv.slice(command.words.length);
    if (args.some((a) => HELP_OPTIONS.includes(a))) return commandHelp(command);
    return command.build(optionValues(command, args));
  }
  if (GROUPS.includes(first)) {
    const [second] = rest;
    if (second !== undefined && !second.startsWith('-')) throw unknownCommand([first, second]);
    if (rest.some((a) => HELP_OPTIONS.includes(a))) return groupHelp(first);
    throw new UsageError(
      `${JSON.stringify(first)} needs a command: ` +
        `${alternatives(groupCommands(first).map((c) => c.words[1] as string))}`,
    );
  }
  if (first.startsWith('-')) {
    throw new UsageError(`unknown option ${JSON.stringify(first)}${didYouMean(first, ['--help', '--version'])}`);
  }
  const words = argv.slice(0, 2);
  const positional = words[1]?.startsWith('-') ? words.slice(0, 1) : words;
  throw unknownCommand(positional);
}

/** `help`, `help <command>`, `help <group>`: exactly one of them, or a mistake. */
function helpFor(topic: readonly string[]): string {
  if (topic.length === 0 || (topic.length === 1 && HELP.includes(topic[0] as string))) return `${USAGE}\n`;
  const command = COMMANDS.find(
    (c) => c.words.length === topic.length && c.words.every((word, i) => topic[i] === word),
  );
  if (command !== undefined) return commandHelp(command);
  if (topic.length === 1 && GROUPS.includes(topic[0] as string)) return groupHelp(topic[0] as string);
  throw unknownCommand(topic);
}

function unknownCommand(words: readonly string[]): UsageError {
  const typed = words.join(' ');
  // A candidate is compared with as many typed words as it has: "sed now" is close to "seed".
  const candidates = [...COMMANDS.map((c) => c.words.join(' ')), ...(words.length === 1 ? GROUPS : [])];
  const suggestion = nearest(candidates, (candidate) => words.slice(0, candidate.split(' ').length).join(' '));
  return new UsageError(
    'unknown command ' +
      `${JSON.stringify(typed)}${suggestion === undefined ? '' : `; did you mean ${JSON.stringify(suggestion)}?`}`,
  );
}

/** The values of `--name value` and `--name=value`; a UsageError for anything else. */
function optionValues(command: CommandSpec, args: readonly string[]): Values {
  const known = command.options.map((o) => o.name);
  // Not strict: the unknown option is reported here, with a suggestion.
  const { tokens } = parseArgs({
    args: [...args],
    options: Object.fromEntries(known.map((name) => [name, { type: 'string' as const }])),
    strict: false,
    allowPositionals: true,
    tokens: true,
  });
  const values: Record<string, string | undefined> = {};
  const name = JSON.stringify(command.words.join(' '));
  for (const token of tokens) {
    if (token.kind === 'positional')
      throw new UsageError(`unexpected argument ${JSON.stringify(token.value)} for ${name}`);
    if (token.kind !== 'option') continue;
    if (!known.includes(token.name)) {
      const options = known.map((o) => `--${o}`);
      throw new UsageError(
        `unknown option ${JSON.stringify(token.rawName)} for ${name}${didYouMean(`--${token.name}`, options)}`,
      );
    }
    if (token.value === undefined) throw new UsageError(`--${token.name} needs a value`);
    values[token.name] = token.value;
  }
  for (const option of command.options) {
    if (option.required && (values[option.name] === undefined || values[option.name] === ''))
      throw new UsageError(`--${option.name} is required`);
  }
  return values;
}
