(kernel_declaration) @local.scope
(block) @local.scope

(parameter name: (identifier) @local.definition)
(loop_variables (identifier) @local.definition)
(let_statement pattern: (identifier) @local.definition)
(tuple_pattern (identifier) @local.definition)
(var_statement name: (identifier) @local.definition)
(consume_statement binding: (identifier) @local.definition)
(pipe_declaration name: (identifier) @local.definition)

(identifier) @local.reference
