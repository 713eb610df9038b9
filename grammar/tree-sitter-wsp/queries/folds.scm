[
  (block)
  (extern_body)
  (parameter_list)
  (argument_list)
  (schedule_declaration)
] @fold
