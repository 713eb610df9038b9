; Syntax highlighting for .wsp (nvim-treesitter / tree-sitter highlight capture names).
; Patterns are written not to overlap where it matters, so that hosts where the first
; matching pattern wins (tree-sitter highlight) and hosts where the last one wins (Neovim)
; agree; where they do overlap, the more specific pattern comes last.

((comment) @comment
  (#not-match? @comment "^///([^/]|$)"))
((comment) @comment.documentation
  (#match? @comment.documentation "^///([^/]|$)"))

[
  "import"
  "const"
  "param"
  "axis"
  "input"
  "output"
  "tensor"
  "workload"
  "channel"
  "process"
  "schedule"
  "expect"
  "extern"
  "pipe"
  "consumes"
  "produces"
  "cube"
  "vector"
] @keyword

"kernel" @keyword.function

[
  "let"
  "var"
] @keyword

"for" @keyword.repeat
(for_statement "in" @keyword.repeat)

[
  "when"
  "else"
] @keyword.conditional

[
  "send"
  "consume"
  "as"
] @keyword

(direction) @keyword.modifier
(direction "in" @keyword.modifier)

(boolean) @boolean
(integer) @number
(float) @number.float
(string) @string
(escape_sequence) @string.escape

[
  "+" "-" "*" "/" "%"
  "==" "!=" "<" "<=" ">" ">="
  "&&" "||" "!"
  "=" "+=" "-=" "*=" "/="
  ".."
] @operator

[ "(" ")" "[" "]" "{" "}" ] @punctuation.bracket
[ "," "." ":" ";" ] @punctuation.delimiter

; Types
((identifier) @type.builtin
  (#match? @type.builtin "^(f16|bf16|f32|f64|i8|i16|i32|i64|u8|u16|u32|u64|bool)$"))
(type dtype: (identifier) @type
  (#not-match? @type "^(f16|bf16|f32|f64|i8|i16|i32|i64|u8|u16|u32|u64|bool)$"))
"Pipe" @type.builtin

; Declarations
(kernel_declaration name: (identifier) @function)
(extern_kernel_declaration name: (identifier) @function)
(extern_binding target: (identifier) @attribute)
(workload_declaration name: (identifier) @function)
(process_declaration name: (identifier) @function)
(schedule_declaration name: (identifier) @function)
(schedule_declaration workload: (identifier) @function.call)
(const_declaration name: (identifier) @constant)
(param_declaration name: (identifier) @variable.parameter)
(axis_declaration name: (identifier) @variable)
(tensor_declaration name: (identifier) @variable)
(channel_declaration name: (identifier) @variable)
(parameter name: (identifier) @variable.parameter)
(loop_variables (identifier) @variable)
(pipe_declaration name: (identifier) @variable)
(module_path (identifier) @module)
(import_list (identifier) @variable)

(directive name: (identifier) @function.method)
(named_argument name: (identifier) @property)
(field_expression
  object: (identifier) @_object
  field: (identifier) @property
  (#not-eq? @_object "P"))

; Calls: tasks `k[coords](..)`, builtins and axis constructors
(call_expression
  function: (index_expression object: (identifier) @function.call))
(call_expression
  function: (identifier) @function.call
  (#not-match? @function.call "^(P|matmul|transpose|cast|full|iota|rowtopk|select|exp|log|sqrt|rsqrt|recip|tanh|sigmoid|sin|cos|relu|gelu|silu|abs|neg|max|min|pow|rowsum|rowmax|rowmin|rowmean|colsum|colmax|colmin|talloc|tpush|tpop|tfree|load|random|zeros|ones|full|close|sequential|combine|connect|replicate|scratch|DenseDyn|Ragged|Sparse)$"))
(call_expression
  function: (identifier) @function.builtin
  (#match? @function.builtin "^(P|matmul|transpose|cast|full|iota|rowtopk|select|exp|log|sqrt|rsqrt|recip|tanh|sigmoid|sin|cos|relu|gelu|silu|abs|neg|max|min|pow|rowsum|rowmax|rowmin|rowmean|colsum|colmax|colmin|talloc|tpush|tpop|tfree|load|random|zeros|ones|close|sequential|combine|connect|replicate|scratch)$"))
(call_expression
  function: (field_expression
    object: (identifier) @function.builtin
    field: (identifier) @function.call)
  (#eq? @function.builtin "P"))

; Axis kinds and the channel type
((identifier) @type
  (#match? @type "^(Dense|DenseDyn|Ragged|Sparse|Channel)$"))
