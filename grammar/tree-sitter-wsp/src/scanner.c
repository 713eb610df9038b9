// External scanner for tree-sitter-wsp: decides whether a newline ends a statement.
//
// A `_newline` token is produced only where the grammar accepts a statement terminator (so
// newlines inside `( )`, `[ ]` or after a binary operator, `,`, `=` or `.` are never
// terminators: there the grammar does not ask for one and the newline is skipped as
// whitespace). When it is asked for, the newline is a terminator unless the next line that is
// not blank or a comment begins with `.` (not `..`), a binary operator (`+ - * / % == != < <=
// > >= && ||`) or the keyword `else` -- the same rule as compiler/syntax's lexer/parser.

#include "tree_sitter/parser.h"

#include <stdbool.h>

enum TokenType { NEWLINE, ERROR_SENTINEL };

void *tree_sitter_wsp_external_scanner_create(void) { return NULL; }
void tree_sitter_wsp_external_scanner_destroy(void *payload) { (void)payload; }
unsigned tree_sitter_wsp_external_scanner_serialize(void *payload, char *buffer) {
  (void)payload;
  (void)buffer;
  return 0;
}
void tree_sitter_wsp_external_scanner_deserialize(void *payload, const char *buffer, unsigned length) {
  (void)payload;
  (void)buffer;
  (void)length;
}

static bool is_ident_char(int32_t c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

// Whether the text at the lexer's position continues the previous line. The lexer has been
// advanced past blank lines and comments already.
static bool continues_line(TSLexer *lexer) {
  int32_t c = lexer->lookahead;
  switch (c) {
    case '.':
      lexer->advance(lexer, false);
      return lexer->lookahead != '.';
    case '+':
    case '-':
    case '*':
    case '%':
    case '<':
    case '>':
      return true;
    case '/':
      // A lone `/` (a comment was skipped by the caller).
      return true;
    case '=':
    case '!':
      lexer->advance(lexer, false);
      return lexer->lookahead == '=';
    case '&':
    case '|':
      lexer->advance(lexer, false);
      return lexer->lookahead == c;
    case 'e': {
      const char *rest = "lse";
      lexer->advance(lexer, false);
      for (const char *p = rest; *p; p++) {
        if (lexer->lookahead != *p) return false;
        lexer->advance(lexer, false);
      }
      return !is_ident_char(lexer->lookahead);
    }
    default:
      return false;
  }
}

bool tree_sitter_wsp_external_scanner_scan(void *payload, TSLexer *lexer, const bool *valid_symbols) {
  (void)payload;
  // In error recovery every symbol is valid: let the internal lexer handle the input.
  if (valid_symbols[ERROR_SENTINEL] || !valid_symbols[NEWLINE]) return false;

  while (lexer->lookahead == ' ' || lexer->lookahead == '\t' || lexer->lookahead == '\f' ||
         lexer->lookahead == 0xFEFF) {
    lexer->advance(lexer, true);
  }
  // A newline is `\n`, `\r\n` or a lone `\r`, as the compiler's lexer reads them.
  if (lexer->lookahead == '\r') {
    lexer->advance(lexer, false);
    if (lexer->lookahead == '\n') lexer->advance(lexer, false);
  } else if (lexer->lookahead == '\n') {
    lexer->advance(lexer, false);
  } else {
    return false;
  }
  lexer->mark_end(lexer);
  lexer->result_symbol = NEWLINE;

  // Look past blank lines and comment lines for a continuation.
  for (;;) {
    while (lexer->lookahead == ' ' || lexer->lookahead == '\t' || lexer->lookahead == '\r' ||
           lexer->lookahead == '\f' || lexer->lookahead == '\n') {
      lexer->advance(lexer, false);
    }
    if (lexer->eof(lexer)) return true;
    if (lexer->lookahead == '/') {
      lexer->advance(lexer, false);
      if (lexer->lookahead == '/') {
        while (!lexer->eof(lexer) && lexer->lookahead != '\n' && lexer->lookahead != '\r')
          lexer->advance(lexer, false);
        continue;
      }
      return false;  // a line beginning with the `/` operator continues the previous one
    }
    return !continues_line(lexer);
  }
}
