/** The help texts of the tool: the general usage, a command's and a group's, all read from COMMANDS. */
import { SCOPES } from '../auth/tokens.ts';
import { COMMANDS, groupCommands, type CommandSpec } from './commands.ts';

/** The general usage: `orders --help` on stdout, and on stderr after a mistake. */
export const USAGE = `usage: orders                      the server: serves the API on HOST:PORT (as make run starts it)
       orders <command> [options]
       orders help [<command>]     this text, or a command's options and an example
       orders <command> --help     the same as orders help <command>
       orders --version            the version

Commands:
${commandRows(COMMANDS)}

The database is DATABASE_URL, or the embedded one in DATA_DIR (default ./data).
A .env file in the working directory supplies variables the environment does not set.
Scopes: ${SCOPES.join(', ')}. TTL units: s, m, h, d.
Settings (PORT, HOST, DATABASE_URL, …) are listed in the README; a near miss of one is a warning.
Exit status: 0 done, 1 the command (or the server's start) failed, 2 a mistake in the command line, a setting or .env.`;

function synopsis(command: CommandSpec): string {
  const options = command.options.map((o) => (o.required ? `--${o.name} ${o.value}` : `[--${o.name} ${o.value}]`));
  return [...command.words, ...options].join(' ');
}

/** One line per command: its synopsis, then its summary in a column. */
function commandRows(commands: readonly CommandSpec[]): string {
  const width = Math.max(...commands.map((c) => synopsis(c).length));
  return commands.map((c) => `  ${synopsis(c).padEnd(width)}   ${c.summary}`).join('\n');
}

/** `orders help <command>`: its synopsis, summary, options and an example. */
export function commandHelp(command: CommandSpec): string {
  const flags = command.options.map((o) => `--${o.name} ${o.value}`);
  const width = Math.max(0, ...flags.map((f) => f.length));
  const options = command.options.map(
    (o, i) => `  ${(flags[i] as string).padEnd(width)}   ${o.required ? 'required' : 'optional'}   ${o.description}`,
  );
  return `usage: orders ${synopsis(command)}

${sentence(command.summary)}

${options.length === 0 ? 'Options: none.' : `Options:\n${options.join('\n')}`}

Example:
  ${command.example}
`;
}

/** `orders help <group>`: the commands of the group. */
export function groupHelp(group: string): string {
  return `usage: orders ${group} <command> [options]

Commands:
${commandRows(groupCommands(group))}

"orders help ${group} <command>" shows a command's options and an example.
`;
}

function sentence(text: string): string {
  return `${text.charAt(0).toUpperCase()}${text.slice(1)}.`;
}

/** `a`, `a or b`, `a, b or c`. */
export function alternatives(words: readonly string[]): string {
  return words.length <= 1 ? words.join('') : `${words.slice(0, -1).join(', ')} or ${words.at(-1)}`;
}
