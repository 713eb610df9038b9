/**
 * @file tree-sitter grammar for .wsp, the workload language of the wsp toolchain.
 *
 * Kept consistent with the normative grammar (grammar/wsp.ebnf) and the Rust parser
 * (compiler/syntax). Statements end at a newline or `;`. A newline is insignificant inside
 * `( )` and `[ ]`, after a token that cannot end a statement (a binary operator, `,`, `=`,
 * `.`), and before a line that begins with `.`, a binary operator or `else`: the external
 * scanner (src/scanner.c) emits a `_newline` token only where the grammar accepts one and the
 * next line does not continue the current one.
 */

/* eslint-disable no-undef */

const PREC = {
  range: 1,
  or: 2,
  and: 3,
  compare: 4,
  add: 5,
  mul: 6,
  unary: 7,
  postfix: 8,
};

const commaSep1 = (rule) => seq(rule, repeat(seq(',', rule)), optional(','));
const commaSep = (rule) => optional(commaSep1(rule));

/** A sequence of `rule`s separated by statement terminators. */
const terminated = ($, rule) =>
  seq(
    repeat($._terminator),
    optional(seq(rule, repeat(seq(repeat1($._terminator), rule)), repeat($._terminator))),
  );

module.exports = grammar({
  name: 'wsp',

  word: ($) => $.identifier,

  externals: ($) => [$._newline, $._error_sentinel],

  extras: ($) => [/\s/, /\uFEFF/, $.comment],

  supertypes: ($) => [$._item, $._statement, $._expression],

  // `import a.b.{x}`: whether a `.` continues the module path is known only after it.
  conflicts: ($) => [[$.module_path]],

  rules: {
    source_file: ($) => terminated($, $._item),

    _terminator: ($) => choice($._newline, ';'),

    comment: (_) => token(seq('//', /[^\n\r]*/)),

    // ---------------------------------------------------------------- items

    _item: ($) =>
      choice(
        $.import_declaration,
        $.const_declaration,
        $.param_declaration,
        $.axis_declaration,
        $.tensor_declaration,
        $.kernel_declaration,
        $.extern_kernel_declaration,
        $.workload_declaration,
        $.channel_declaration,
        $.process_declaration,
        $.schedule_declaration,
        $.expect_declaration,
      ),

    import_declaration: ($) =>
      seq(
        'import',
        field('path', $.module_path),
        optional(seq('.', field('names', $.import_list))),
      ),

    module_path: ($) => seq($.identifier, repeat(seq('.', $.identifier))),

    import_list: ($) => seq('{', commaSep($.identifier), '}'),

    const_declaration: ($) =>
      seq(
        'const',
        field('name', $.identifier),
        optional(seq(':', field('type', $.type))),
        '=',
        field('value', $._expression),
      ),

    param_declaration: ($) =>
      seq(
        'param',
        field('name', $.identifier),
        ':',
        field('type', $.type),
        optional(seq('=', field('default', $._expression))),
      ),

    axis_declaration: ($) =>
      seq('axis', field('name', $.identifier), '=', field('value', $._expression)),

    tensor_declaration: ($) =>
      seq(
        field('kind', choice('input', 'output', 'tensor')),
        field('name', $.identifier),
        ':',
        field('type', $.type),
        optional(seq('=', field('init', $._expression))),
      ),

    kernel_declaration: ($) =>
      seq(
        'kernel',
        field('name', $.identifier),
        field('parameters', $.parameter_list),
        field('body', $.block),
      ),

    extern_kernel_declaration: ($) =>
      seq(
        'extern',
        'kernel',
        field('name', $.identifier),
        field('parameters', $.parameter_list),
        field('body', $.extern_body),
      ),

    extern_body: ($) => seq('{', commaSep($.extern_binding), '}'),

    extern_binding: ($) =>
      seq(
        field('target', $.identifier),
        ':',
        choice(field('path', prec(1, $.string)), field('value', $._expression)),
      ),

    parameter_list: ($) => seq('(', commaSep($.parameter), ')'),

    parameter: ($) =>
      seq(
        field('name', $.identifier),
        ':',
        optional(field('direction', $.direction)),
        field('type', $.type),
        optional(seq('=', field('default', $._expression))),
      ),

    direction: (_) => choice('in', 'out', 'inout'),

    workload_declaration: ($) =>
      seq(
        'workload',
        field('name', $.identifier),
        choice(seq('=', field('value', $._expression)), field('body', $.block)),
      ),

    channel_declaration: ($) =>
      seq(
        'channel',
        field('name', $.identifier),
        optional(
          seq(
            ':',
            field('type', $.identifier),
            optional(seq('[', optional($._argument_list_inner), ']')),
          ),
        ),
      ),

    process_declaration: ($) =>
      seq(
        'process',
        field('name', $.identifier),
        repeat(choice($.consumes_clause, $.produces_clause)),
        field('body', $.block),
      ),

    consumes_clause: ($) => seq('consumes', $.identifier, repeat(seq(',', $.identifier))),
    produces_clause: ($) => seq('produces', $.identifier, repeat(seq(',', $.identifier))),

    schedule_declaration: ($) =>
      seq(
        'schedule',
        field('name', $.identifier),
        '=',
        field('workload', $.identifier),
        repeat($.directive),
      ),

    directive: ($) =>
      seq(
        '.',
        field('name', $.identifier),
        optional(seq('(', optional($._argument_list_inner), ')')),
      ),

    expect_declaration: ($) => seq('expect', field('condition', $._expression)),

    // ---------------------------------------------------------------- types

    type: ($) =>
      seq(
        field('dtype', $.identifier),
        optional(seq('[', commaSep($.dimension), ']')),
      ),

    dimension: ($) => seq(optional(field('partial', '..')), field('size', $._non_range_expression)),

    // ---------------------------------------------------------------- statements

    block: ($) => seq('{', terminated($, $._statement), '}'),

    _statement: ($) =>
      choice(
        $.let_statement,
        $.var_statement,
        $.for_statement,
        $.when_statement,
        $.send_statement,
        $.consume_statement,
        $.pipe_declaration,
        $.section,
        $.assignment,
        $.expression_statement,
      ),

    let_statement: ($) =>
      seq(
        'let',
        field('pattern', choice($.identifier, $.tuple_pattern)),
        optional(seq(':', field('type', $.type))),
        '=',
        field('value', $._expression),
      ),

    tuple_pattern: ($) => seq('(', commaSep1($.identifier), ')'),

    var_statement: ($) =>
      seq(
        'var',
        field('name', $.identifier),
        optional(seq(':', field('type', $.type))),
        '=',
        field('value', $._expression),
      ),

    for_statement: ($) =>
      seq(
        'for',
        field('variables', $.loop_variables),
        'in',
        field('iterator', $._expression),
        field('body', $.block),
      ),

    loop_variables: ($) => seq($.identifier, repeat(seq(',', $.identifier))),

    when_statement: ($) =>
      seq(
        'when',
        field('condition', $._expression),
        field('body', $.block),
        repeat($.else_when_clause),
        optional($.else_clause),
      ),

    else_when_clause: ($) =>
      seq('else', 'when', field('condition', $._expression), field('body', $.block)),

    else_clause: ($) => seq('else', field('body', $.block)),

    send_statement: ($) =>
      seq('send', field('channel', $.identifier), ',', field('value', $._expression)),

    consume_statement: ($) =>
      seq(
        'consume',
        field('channel', $.identifier),
        'as',
        field('binding', choice($.identifier, $.tuple_pattern)),
        field('body', $.block),
      ),

    pipe_declaration: ($) =>
      seq(
        'pipe',
        field('name', $.identifier),
        ':',
        'Pipe',
        '[',
        field('element', $.type),
        optional(seq(',', optional($._argument_list_inner))),
        ']',
      ),

    section: ($) => seq(field('kind', choice('cube', 'vector')), field('body', $.block)),

    assignment: ($) =>
      seq(
        field('target', $._expression),
        field('operator', choice('=', '+=', '-=', '*=', '/=')),
        field('value', $._expression),
      ),

    expression_statement: ($) => $._expression,

    // ---------------------------------------------------------------- expressions

    _expression: ($) => choice($.range_expression, $._non_range_expression),

    _non_range_expression: ($) =>
      choice(
        $.binary_expression,
        $.unary_expression,
        $.call_expression,
        $.index_expression,
        $.field_expression,
        $.parenthesized_expression,
        $.tuple_expression,
        $.list_expression,
        $.identifier,
        alias($._contextual_keyword, $.identifier),
        $.integer,
        $.float,
        $.string,
        $.boolean,
      ),

    range_expression: ($) =>
      prec.left(
        PREC.range,
        choice(
          seq(field('start', $._non_range_expression), '..', field('end', $._non_range_expression)),
          seq(field('start', $._non_range_expression), '..'),
          seq('..', field('end', $._non_range_expression)),
          '..',
        ),
      ),

    binary_expression: ($) => {
      const table = [
        [PREC.or, '||'],
        [PREC.and, '&&'],
        [PREC.compare, choice('==', '!=', '<', '<=', '>', '>=')],
        [PREC.add, choice('+', '-')],
        [PREC.mul, choice('*', '/', '%')],
      ];
      return choice(
        ...table.map(([p, op]) =>
          prec.left(
            p,
            seq(
              field('left', $._non_range_expression),
              field('operator', op),
              field('right', $._non_range_expression),
            ),
          ),
        ),
      );
    },

    unary_expression: ($) =>
      prec(PREC.unary, seq(field('operator', choice('-', '!')), field('operand', $._non_range_expression))),

    call_expression: ($) =>
      prec(
        PREC.postfix,
        seq(field('function', $._non_range_expression), field('arguments', $.argument_list)),
      ),

    argument_list: ($) => seq('(', optional($._argument_list_inner), ')'),

    _argument_list_inner: ($) => commaSep1(choice($.named_argument, $._expression)),

    named_argument: ($) => seq(field('name', $.identifier), ':', field('value', $._expression)),

    index_expression: ($) =>
      prec(
        PREC.postfix,
        seq(field('object', $._non_range_expression), field('indices', $.index_list)),
      ),

    index_list: ($) => seq('[', commaSep(choice($._expression, $.full_slice)), ']'),

    full_slice: (_) => ':',

    field_expression: ($) =>
      prec(PREC.postfix, seq(field('object', $._non_range_expression), '.', field('field', $.identifier))),

    parenthesized_expression: ($) => seq('(', $._expression, ')'),

    tuple_expression: ($) =>
      choice(seq('(', ')'), seq('(', $._expression, ',', commaSep($._expression), ')')),

    list_expression: ($) => seq('[', commaSep($._expression), ']'),

    boolean: (_) => choice('true', 'false'),

    // `pipe`, `cube` and `vector` start statements only when a declaration or a block follows;
    // elsewhere they are ordinary names (as in compiler/syntax).
    _contextual_keyword: (_) => choice('pipe', 'cube', 'vector'),

    identifier: (_) => /[A-Za-z_][A-Za-z0-9_]*/,

    integer: (_) => token(choice(/0[xX][0-9a-fA-F_]+/, /[0-9][0-9_]*/)),

    float: (_) =>
      token(
        choice(
          /[0-9][0-9_]*\.[0-9][0-9_]*([eE][+-]?[0-9]+)?/,
          /[0-9][0-9_]*[eE][+-]?[0-9]+/,
        ),
      ),

    string: ($) => seq('"', repeat(choice($.string_content, $.escape_sequence)), token.immediate('"')),

    string_content: (_) => token.immediate(prec(1, /[^"\\\n]+/)),

    escape_sequence: (_) => token.immediate(/\\./),
  },
});
