package graphapi

// resolver is the root of the resolvers; each object's resolver is in the
// file of its resource, like the HTTP layer's handlers.
type resolver struct{ s *Server }

type (
	queryResolver      struct{ *resolver }
	mutationResolver   struct{ *resolver }
	meResolver         struct{ *resolver }
	meOrgResolver      struct{ *resolver }
	orgResolver        struct{ *resolver }
	orgUserResolver    struct{ *resolver }
	teamResolver       struct{ *resolver }
	teamMemberResolver struct{ *resolver }
	ticketResolver     struct{ *resolver }
	commentResolver    struct{ *resolver }
	webhookResolver    struct{ *resolver }
)

func (r *resolver) Query() QueryResolver           { return queryResolver{r} }
func (r *resolver) Mutation() MutationResolver     { return mutationResolver{r} }
func (r *resolver) Me() MeResolver                 { return meResolver{r} }
func (r *resolver) MeOrg() MeOrgResolver           { return meOrgResolver{r} }
func (r *resolver) Org() OrgResolver               { return orgResolver{r} }
func (r *resolver) OrgUser() OrgUserResolver       { return orgUserResolver{r} }
func (r *resolver) Team() TeamResolver             { return teamResolver{r} }
func (r *resolver) TeamMember() TeamMemberResolver { return teamMemberResolver{r} }
func (r *resolver) Ticket() TicketResolver         { return ticketResolver{r} }
func (r *resolver) Comment() CommentResolver       { return commentResolver{r} }
func (r *resolver) Webhook() WebhookResolver       { return webhookResolver{r} }
